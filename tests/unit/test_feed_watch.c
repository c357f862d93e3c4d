/* The feed's watchers (gateway/store/shared/feed_watch.c): a watcher of one shard's assignments is
 * woken by a durable group that placed on its shard's bit or by an epoch record, not by groups that
 * placed elsewhere (an idle shard's watcher then reads nothing until its deadline); a watcher of
 * every receipt is woken by any group; a group already durable past the cursor is not waited for.
 */
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "feed_watch.h"
#include "timing.h"

struct counted {
    struct gw_feed_waiter w; /* first: the wake callback finds the counter from it */
    atomic_int woken;
};

static void count_wake(struct gw_feed_waiter *w)
{
    atomic_fetch_add(&((struct counted *)w)->woken, 1);
}

static void no_suspend(void *arg)
{
    (void)arg;
}

static void settle(void)
{
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

static int queue(struct gw_feed_watch *watch, struct counted *c, const char *shard, uint64_t after)
{
    memset(c, 0, sizeof(*c));
    c->w.after = after;
    c->w.shard_bit = shard ? gw_feed_shard_bit(shard, strlen(shard)) : 0;
    c->w.deadline_ns = gw_now_ns() + 60ull * 1000000000u;
    c->w.wake = count_wake;
    return gw_feed_watch_wait(watch, &c->w, no_suspend, NULL);
}

static void test_wakes_by_shard(void)
{
    struct gw_feed_watch watch;
    CHECK_EQ_U64(gw_feed_watch_start(&watch, 0, 8), 0);
    uint64_t s0 = gw_feed_shard_bit("s0", 2), idle = gw_feed_shard_bit("idle", 4);
    CHECK_EQ_U64(s0 != idle, 1); /* bits 22 and 19 */
    struct counted on_idle, on_s0, on_all;
    CHECK_EQ_U64(queue(&watch, &on_idle, "idle", 0), 1);
    CHECK_EQ_U64(queue(&watch, &on_s0, "s0", 0), 1);
    CHECK_EQ_U64(queue(&watch, &on_all, NULL, 0), 1);
    gw_feed_watch_durable(&watch, 5, s0); /* five receipts, all on s0 */
    settle();
    CHECK_EQ_U64(atomic_load(&on_s0.woken), 1);
    CHECK_EQ_U64(atomic_load(&on_all.woken), 1);
    CHECK_EQ_U64(atomic_load(&on_idle.woken), 0);
    CHECK_EQ_U64(queue(&watch, &on_s0, "s0", 5), 1); /* re-read to 5, waits again */
    gw_feed_watch_durable(&watch, 6, idle);
    settle();
    CHECK_EQ_U64(atomic_load(&on_idle.woken), 1);
    CHECK_EQ_U64(atomic_load(&on_s0.woken), 0);
    /* an epoch record concerns every watcher */
    CHECK_EQ_U64(queue(&watch, &on_idle, "idle", 6), 1);
    gw_feed_watch_durable(&watch, 7, GW_FEED_ALL_SHARDS);
    settle();
    CHECK_EQ_U64(atomic_load(&on_idle.woken), 1);
    CHECK_EQ_U64(atomic_load(&on_s0.woken), 1);
    /* already durable past the cursor on its bit: not queued; past it elsewhere only: queued */
    CHECK_EQ_U64(queue(&watch, &on_s0, "s0", 6), 0);
    CHECK_EQ_U64(queue(&watch, &on_s0, "s0", 7), 1);
    gw_feed_watch_stop(&watch); /* wakes what waits */
    CHECK_EQ_U64(atomic_load(&on_s0.woken), 1);
    gw_feed_watch_destroy(&watch);
}

int main(void)
{
    test_wakes_by_shard();
    return CHECK_DONE();
}
