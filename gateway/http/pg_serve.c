/* `shardgate serve --store postgres://` (docs/journal.md §10): the start, and the read
 * endpoints answered from the database every replica shares. */
#include "request.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exit.h"
#include "log.h"

static void log_epoch(const char *event, const char *epoch, uint64_t epoch_seq, const char *why)
{
    struct gw_buf f;
    gw_buf_init(&f);
    gw_log_str(&f, "epoch", epoch);
    gw_log_u64(&f, "epoch_seq", epoch_seq);
    if (why)
        gw_log_str(&f, "message", why);
    gw_log_event(event, &f);
}

/* At start the database's latest epoch replaces the files' topology (docs/journal.md §10). */
static int adopt(void *ctx, const struct gw_contract *contract, struct gw_membership *members,
                 const struct gw_epoch_entry *e, struct gw_error *err)
{
    struct gw_topology *topo = ctx, next;
    int rc = gw_topology_build(contract, members, &next, err);
    if (rc != 0)
        return rc;
    if (strcmp(next.epoch, topo->epoch) != 0)
        log_epoch("epoch_from_store", e->epoch, e->epoch_seq,
                  "the database's latest epoch differs from --conf/--shards: serving the "
                  "database's");
    gw_topology_free(topo);
    *topo = next;
    return 0;
}

/* A newer epoch from the database, while serving: its view published (under reload_lock). */
static int publish(void *ctx, const struct gw_contract *contract, struct gw_membership *members,
                   const struct gw_epoch_entry *e, struct gw_error *err)
{
    struct gw_server *s = ctx;
    struct gw_view *cur = gw_view_acquire(&s->views), *v;
    struct gw_topology next;
    int rc = gw_topology_build_from(contract, members, cur->topo.ring, &next, err);
    gw_view_unref(cur);
    if (rc == 0 &&
        (rc = gw_view_new(&s->views, &next, e->epoch_seq, &s->store.ledger, &v, err)) == 0) {
        gw_view_publish(&s->views, v);
        atomic_store(&s->metrics.epoch_seq, e->epoch_seq);
        log_epoch("epoch_applied", e->epoch, e->epoch_seq, NULL);
    }
    return rc;
}

/* The listener's news: every epoch after ours, the newest published. */
static void follow(void *ctx, struct gw_pg_conn *c)
{
    struct gw_server *s = ctx;
    struct gw_error err;
    pthread_mutex_lock(&s->reload_lock);
    int rc = gw_pg_epochs_catch_up(&s->store.pg_store, c, publish, s, &err);
    pthread_mutex_unlock(&s->reload_lock);
    if (rc != 0 && rc != -EIO)
        log_epoch("epoch_refused", "", 0, err.msg);
}

/* Every commit, this replica's or (by NOTIFY) another's: the feed's watchers learn of it. */
static void durable(void *ctx, uint64_t last_seq, uint64_t shard_bits)
{
    struct gw_server *s = ctx;
    gw_feed_watch_durable(&s->store.watch, last_seq, shard_bits);
}

int gw_server_open_pg(struct gw_server *s, struct gw_topology *topo, unsigned delay_ms)
{
    struct gw_error err;
    struct gw_view *v;
    struct gw_epoch_entry latest;
    struct gw_pg_open o = {.url = s->opt.store,
                           .topo = topo,
                           .adopt = adopt,
                           .adopt_ctx = topo,
                           .metrics = &s->metrics,
                           .delay_ms = delay_ms,
                           .hook = {durable, s}};
    int rc = gw_pg_store_open(&s->store.pg_store, &o, &err);
    if (rc != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return rc == -ENOMEM ? GW_EXIT_INTERNAL : GW_EXIT_UNUSABLE;
    }
    s->store.pg = 1;
    gw_chain_latest(&s->store.pg_store.chain, &latest);
    if (gw_view_new(&s->views, topo, latest.epoch_seq, &s->store.ledger, &v, &err) != 0) {
        fprintf(stderr, "shardgate: %s\n", err.msg);
        return GW_EXIT_INTERNAL;
    }
    gw_view_publish(&s->views, v);
    atomic_store(&s->metrics.epoch_seq, latest.epoch_seq);
    /* The watch before the listener: it announces other replicas' commits to it. */
    if (gw_feed_watch_start(&s->store.watch, s->store.pg_store.start_seq, s->opt.max_watchers) !=
            0 ||
        gw_pg_listener_start(&s->store.pg_store, follow, s, &err) != 0) {
        fprintf(stderr, "shardgate: cannot start the feed's watch or the store's listener\n");
        return GW_EXIT_INTERNAL;
    }
    return GW_EXIT_OK;
}

int gw_serve_catch_up(struct gw_server *s, struct gw_error *err)
{
    return gw_store_catch_up(&s->store, publish, s, err);
}
