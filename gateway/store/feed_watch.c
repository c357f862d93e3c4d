/* The thread that wakes feed watchers: on a durable commit past their cursor, or at their
 * deadline (docs/api.md §17). */
#include "feed_watch.h"

#include <errno.h>
#include <string.h>

#include "fnv.h"
#include "timing.h"

uint64_t gw_feed_shard_bit(const char *id, size_t len)
{
    return 1ull << (gw_fnv1a(id, len) & 63);
}

/* The lock held: the last durable seq of a record that concerns `x`. */
static uint64_t latest_for(const struct gw_feed_watch *w, const struct gw_feed_waiter *x)
{
    if (!x->shard_bit)
        return w->durable;
    return w->bit_seq[__builtin_ctzll(x->shard_bit)];
}

static void unlink_waiter(struct gw_feed_watch *w, struct gw_feed_waiter *x)
{
    if (x->prev)
        x->prev->next = x->next;
    else
        w->head = x->next;
    if (x->next)
        x->next->prev = x->prev;
    x->prev = x->next = NULL;
    x->queued = 0;
}

/* Wakes the waiters that are due; returns the earliest deadline left (0: none). */
static uint64_t wake_due(struct gw_feed_watch *w)
{
    uint64_t now = gw_now_ns(), earliest = 0;
    for (struct gw_feed_waiter *x = w->head, *next; x; x = next) {
        next = x->next;
        if (w->worker.stopping || latest_for(w, x) > x->after || now >= x->deadline_ns) {
            unlink_waiter(w, x);
            x->wake(x);
        } else if (!earliest || x->deadline_ns < earliest) {
            earliest = x->deadline_ns;
        }
    }
    return earliest;
}

static void *watch_main(void *arg)
{
    struct gw_feed_watch *w = arg;
    pthread_mutex_lock(&w->worker.lock);
    for (;;) {
        uint64_t earliest = wake_due(w);
        if (w->worker.stopping)
            break;
        gw_worker_wait_until(&w->worker, earliest);
    }
    pthread_mutex_unlock(&w->worker.lock);
    return NULL;
}

int gw_feed_watch_start(struct gw_feed_watch *w, uint64_t durable, unsigned max_watchers)
{
    memset(w, 0, sizeof(*w));
    w->durable = durable;
    w->max_watchers = max_watchers;
    struct gw_error err;
    return gw_worker_start(&w->worker, watch_main, w, "feed", &err);
}

void gw_feed_watch_stop(struct gw_feed_watch *w)
{
    gw_worker_join(&w->worker);
}

void gw_feed_watch_destroy(struct gw_feed_watch *w)
{
    gw_worker_destroy(&w->worker);
}

int gw_feed_watch_enter(struct gw_feed_watch *w)
{
    pthread_mutex_lock(&w->worker.lock);
    int ok = w->watchers < w->max_watchers;
    if (ok)
        w->watchers++;
    pthread_mutex_unlock(&w->worker.lock);
    return ok ? 0 : -EBUSY;
}

void gw_feed_watch_leave(struct gw_feed_watch *w)
{
    pthread_mutex_lock(&w->worker.lock);
    if (w->watchers > 0)
        w->watchers--;
    pthread_mutex_unlock(&w->worker.lock);
}

unsigned gw_feed_watch_count(struct gw_feed_watch *w)
{
    pthread_mutex_lock(&w->worker.lock);
    unsigned n = w->watchers;
    pthread_mutex_unlock(&w->worker.lock);
    return n;
}

uint64_t gw_feed_watch_head(struct gw_feed_watch *w)
{
    pthread_mutex_lock(&w->worker.lock);
    uint64_t head = w->durable;
    pthread_mutex_unlock(&w->worker.lock);
    return head;
}

void gw_feed_watch_durable(struct gw_feed_watch *w, uint64_t seq, uint64_t shard_bits)
{
    if (!w->worker.started)
        return;
    pthread_mutex_lock(&w->worker.lock);
    /* the max: with --store postgres other replicas' announcements may come late */
    w->durable = seq > w->durable ? seq : w->durable;
    for (uint64_t bits = shard_bits; bits; bits &= bits - 1) {
        uint64_t *b = &w->bit_seq[__builtin_ctzll(bits)];
        *b = seq > *b ? seq : *b;
    }
    if (w->head)
        gw_worker_wake(&w->worker);
    pthread_mutex_unlock(&w->worker.lock);
}

int gw_feed_watch_wait(struct gw_feed_watch *w, struct gw_feed_waiter *waiter,
                       void (*suspend)(void *arg), void *arg)
{
    pthread_mutex_lock(&w->worker.lock);
    int queue = !w->worker.stopping && latest_for(w, waiter) <= waiter->after &&
                gw_now_ns() < waiter->deadline_ns;
    if (queue) {
        suspend(arg);
        waiter->queued = 1;
        waiter->prev = NULL;
        waiter->next = w->head;
        if (w->head)
            w->head->prev = waiter;
        w->head = waiter;
        gw_worker_wake(&w->worker); /* its deadline may be the earliest now */
    }
    pthread_mutex_unlock(&w->worker.lock);
    return queue;
}
