/* Feed pages in memory (docs/api.md §17, docs/decisions.md §23, §24). A rendered page is one
 * body shared by every answer that sends it and by the cache of recent pages: followers of a
 * shard's tail are woken by the same commit and ask from the same cursor, so the first answer
 * is kept and the others send the same bytes, read and rendered once and held once. Every live
 * body counts against one total, --feed-memory: a page that would pass it is refused (503
 * feed_memory_exhausted) once the kept pages no answer holds have been dropped, unless no other
 * page is held (so a page larger than the total is still served, alone). Kept pages that no
 * answer is sending hold at most a quarter of the total. A page stays a right
 * answer to its question: the records after a cursor never change, a later read could only add
 * more, and segments leave the state dir only by `shardgate journal archive`, which refuses
 * while a server runs (docs/journal.md §8), so no page outlives its records (no 410 is hidden).
 * Internal to http/. */
#ifndef SHARDGATE_GW_FEED_CACHE_H
#define SHARDGATE_GW_FEED_CACHE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "feed_render.h"
#include "membership.h"

#define GW_FEED_CACHE_SLOTS 16 /* pages kept for the questions that come next */
#define GW_FEED_IDLE_SHARE 4   /* kept pages no answer sends: at most 1/4 of the total */

/* What a page answers: the stream (a shard as a JSON string, or "" for every receipt), the
 * form, the cursor and the limit. */
struct gw_feed_question {
    char shard[GW_SHARD_ID_MAX + 3];
    size_t shard_len;
    enum gw_feed_form form;
    uint64_t after;
    size_t limit;
};

struct gw_feed_cache;

/* A page's bytes: freed, and uncounted, by the last gw_feed_body_unref. Only `len` counts
 * against the total: a long receipt's record stays in its file (feed_render.h). */
struct gw_feed_body {
    atomic_uint refs;
    struct gw_feed_cache *cache; /* whose total counts it */
    char *data;
    size_t len;
    struct gw_feed_long whole; /* fd -1: none */
    size_t whole_at;
    atomic_int damaged; /* 1: its long receipt failed its check when sent again: not shared */
};

struct gw_feed_page {
    struct gw_feed_question q;
    struct gw_feed_body *body; /* NULL: a free slot */
    uint64_t last;             /* the page's bookmark */
    uint64_t used;             /* the cache's clock at the last use: the least recent goes */
};

struct gw_feed_cache {
    pthread_mutex_t lock;
    struct gw_feed_page pages[GW_FEED_CACHE_SLOTS];
    uint64_t clock;
    size_t limit;          /* --feed-memory */
    atomic_size_t held;    /* bytes of every live body */
    atomic_ullong bodies;  /* live bodies */
    atomic_ullong refused; /* pages refused for the total */
};

void gw_feed_cache_init(struct gw_feed_cache *c, size_t limit);
void gw_feed_cache_free(struct gw_feed_cache *c);

/* The page answering q with a reference for the caller, its bookmark in *last; NULL when none
 * is kept (a kept page marked damaged is dropped). */
struct gw_feed_body *gw_feed_cache_get(struct gw_feed_cache *c, const struct gw_feed_question *q,
                                       uint64_t *last);

/* 1 when `len` more bytes fit in the total, after dropping kept pages no answer holds, or when
 * no page is held at all; 0 (counted as refused) otherwise. */
int gw_feed_cache_room(struct gw_feed_cache *c, size_t len);

/* The rendered page `out` (its bytes and long receipt move into the body; out is left empty) as a
 * body with one reference for the caller, kept for q as well when `keep`; NULL when it does not
 * fit (see gw_feed_cache_room) or on no memory, out then freed. */
struct gw_feed_body *gw_feed_cache_make(struct gw_feed_cache *c, const struct gw_feed_question *q,
                                        struct gw_feed_out *out, uint64_t last, int keep);

/* Drops a reference (an answer sent, or the cache's own); a void * for MHD's free callback. */
void gw_feed_body_unref(void *body);

#endif
