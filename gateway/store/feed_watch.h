/* Watchers of the feed: the journal writer says "durable through seq S" and every watcher
 * waiting for a record after its cursor is woken, or at its deadline; a thread of its own does
 * the waking, so the writer only stores a number and signals. No thread waits for a watcher. */
#ifndef SHARDGATE_GW_FEED_WATCH_H
#define SHARDGATE_GW_FEED_WATCH_H

#include <pthread.h>

#include "worker.h"
#include <stdint.h>

struct gw_feed_waiter;
/* Called with the watch's lock held: must only wake (e.g. MHD_resume_connection). */
typedef void (*gw_feed_wake_fn)(struct gw_feed_waiter *w);

struct gw_feed_waiter {
    uint64_t after;       /* woken once a receipt > after is durable */
    uint64_t deadline_ns; /* or then (gw_now_ns clock) */
    gw_feed_wake_fn wake;
    struct gw_feed_waiter *prev, *next;
    int queued;
};

struct gw_feed_watch {
    struct gw_worker worker; /* its lock guards the waiters, durable and the count */
    uint64_t durable;
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

/* The writer's announcement after a group. */
void gw_feed_watch_durable(struct gw_feed_watch *w, uint64_t seq);

/* Queues `waiter` unless a receipt after waiter->after is already durable, its deadline has
 * passed, or the watch stops; when it queues, `suspend(arg)` runs under the lock first, so a
 * wake can never come before it. Returns 1 queued, 0 not. */
int gw_feed_watch_wait(struct gw_feed_watch *w, struct gw_feed_waiter *waiter,
                       void (*suspend)(void *arg), void *arg);

#endif
