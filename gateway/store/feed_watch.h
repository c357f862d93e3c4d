/* Watchers of the feed: the journal writer says "durable through seq S, placing on these shards"
 * and every watcher waiting for a record after its cursor is woken, or at its deadline; a thread
 * of its own does the waking, so the writer only stores numbers and signals. No thread waits for
 * a watcher. A watcher of one shard's assignments is woken only by a group that placed on a
 * shard sharing its bit (a 64-bit set of shards, gw_feed_shard_bit), so an idle shard's watcher
 * does not re-read every group to find nothing in it. */
#ifndef SHARDGATE_GW_FEED_WATCH_H
#define SHARDGATE_GW_FEED_WATCH_H

#include <pthread.h>

#include "worker.h"
#include <stdint.h>

struct gw_feed_waiter;
/* Called with the watch's lock held: must only wake (e.g. MHD_resume_connection). */
typedef void (*gw_feed_wake_fn)(struct gw_feed_waiter *w);

/* The bit of a shard in the sets the writer announces (FNV-1a of its id, mod 64). */
uint64_t gw_feed_shard_bit(const char *id, size_t len);

#define GW_FEED_ALL_SHARDS UINT64_MAX /* an epoch record: every watcher is concerned */

struct gw_feed_waiter {
    uint64_t after;       /* woken once a receipt > after is durable (on its shard's bit) */
    uint64_t shard_bit;   /* 0: any record (GET /v1/receipts) */
    uint64_t deadline_ns; /* or then (gw_now_ns clock) */
    gw_feed_wake_fn wake;
    struct gw_feed_waiter *prev, *next;
    int queued;
};

struct gw_feed_watch {
    struct gw_worker worker; /* its lock guards the waiters, durable, bit_seq and the count */
    uint64_t durable;
    uint64_t bit_seq[64]; /* the last durable seq of a group that placed on a shard of bit i */
    struct gw_feed_waiter *head;
    unsigned watchers, max_watchers;
};

/* Starts the waking thread. Returns 0 or -errno. */
int gw_feed_watch_start(struct gw_feed_watch *w, uint64_t durable, unsigned max_watchers);
/* Wakes every waiter, stops the thread; later waits return 0 at once. */
void gw_feed_watch_stop(struct gw_feed_watch *w);
void gw_feed_watch_destroy(struct gw_feed_watch *w);

/* A feed request starts: 0, or -EBUSY past max_watchers (it is then not counted). */
int gw_feed_watch_enter(struct gw_feed_watch *w);
void gw_feed_watch_leave(struct gw_feed_watch *w);
/* Feed requests in the server now. */
unsigned gw_feed_watch_count(struct gw_feed_watch *w);

/* The writer's announcement after a group: durable through `seq`; `shard_bits` the union of the
 * group's records' bits (GW_FEED_ALL_SHARDS for an epoch record). */
void gw_feed_watch_durable(struct gw_feed_watch *w, uint64_t seq, uint64_t shard_bits);

/* The seq every record through which is durable (the feed's head). */
uint64_t gw_feed_watch_head(struct gw_feed_watch *w);

/* Queues `waiter` unless a record after waiter->after that concerns it (its shard's bit, or any
 * when shard_bit is 0) is already durable, its deadline has
 * passed, or the watch stops; when it queues, `suspend(arg)` runs under the lock first, so a
 * wake can never come before it. Returns 1 queued, 0 not. */
int gw_feed_watch_wait(struct gw_feed_watch *w, struct gw_feed_waiter *waiter,
                       void (*suspend)(void *arg), void *arg);

#endif
