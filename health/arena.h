/* Bump allocation for jansson documents that are thrown away together (journal batches). */
#ifndef HC_ARENA_H
#define HC_ARENA_H

#include <stddef.h>

struct hc_arena_block;

struct hc_arena {
    struct hc_arena_block *first, *cur;
};

/* Routes jansson's allocations through the arena-aware functions. Must run before any jansson
 * allocation (first thing in main). Without it arenas are never used and jansson mallocs. */
void hc_arena_install(void);
int hc_arena_installed(void);

/* Until hc_arena_leave(), this thread's jansson allocations come from a and jansson's frees
 * of them do nothing; the memory returns with hc_arena_reset(a). */
void hc_arena_enter(struct hc_arena *a);
void hc_arena_leave(void);

/* Makes all of a's memory reusable; no document allocated from it may be used after. */
void hc_arena_reset(struct hc_arena *a);
void hc_arena_free(struct hc_arena *a);

#endif
