/* Recent feed pages, shared by the consumers that ask the same question (docs/api.md §17,
 * docs/decisions.md §23). Followers of a shard's tail are woken by the same commit and ask from
 * the same cursor: the first answer is kept and copied to the others, so the journal's receipts
 * are read and rendered once, not once per consumer. A page stays a right answer to its
 * question: the records after a cursor never change, a later read could only add more, and
 * segments leave the state dir only by `shardgate journal archive`, which refuses while a
 * server runs (docs/journal.md §8), so no page outlives its records (no 410 is hidden).
 * Internal to http/. */
#ifndef SHARDGATE_GW_FEED_CACHE_H
#define SHARDGATE_GW_FEED_CACHE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "feed_render.h"
#include "membership.h"

#define GW_FEED_CACHE_SLOTS 16 /* pages kept: each at most 1 MiB plus its last receipt's items */

/* What a page answers: the stream (a shard as a JSON string, or "" for every receipt), the
 * form, the cursor and the limit. */
struct gw_feed_question {
    char shard[GW_SHARD_ID_MAX + 3];
    size_t shard_len;
    enum gw_feed_form form;
    uint64_t after;
    size_t limit;
};

struct gw_feed_page {
    struct gw_feed_question q;
    char *body; /* NULL: a free slot */
    size_t len;
    uint64_t last; /* the page's bookmark */
    uint64_t used; /* the cache's clock at the last use: the least recent is replaced */
};

struct gw_feed_cache {
    pthread_mutex_t lock;
    struct gw_feed_page pages[GW_FEED_CACHE_SLOTS];
    uint64_t clock;
};

void gw_feed_cache_init(struct gw_feed_cache *c);
void gw_feed_cache_free(struct gw_feed_cache *c);

/* The page answering q, copied into `out` (empty on entry), its bookmark in *last: 1; 0 when
 * there is none (or no memory for the copy). */
int gw_feed_cache_get(struct gw_feed_cache *c, const struct gw_feed_question *q, struct gw_buf *out,
                      uint64_t *last);

/* Keeps a copy of a page with at least one item (an empty one is a wait, never an answer). */
void gw_feed_cache_put(struct gw_feed_cache *c, const struct gw_feed_question *q,
                       const struct gw_buf *body, uint64_t last);

#endif
