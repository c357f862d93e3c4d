/* The epochs of `shardgate serve --store postgres://` (docs/journal.md §10): the database's
 * latest adopted at start, other replicas' published while serving. */
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
    if (rc == 0 && (rc = gw_view_new(&s->views, &next, e->epoch_seq, gw_store_ledger(s->store), &v,
                                     err)) == 0) {
        gw_view_publish(&s->views, v);
        atomic_store(&s->metrics.epoch_seq, e->epoch_seq);
        log_epoch("epoch_applied", e->epoch, e->epoch_seq, NULL);
    }
    return rc;
}

void gw_serve_epoch_hooks(struct gw_server *s, struct gw_store_options *o, struct gw_topology *topo)
{
    o->adopt = adopt;
    o->adopt_ctx = topo;
    o->publish = publish;
    o->publish_ctx = s;
    o->publish_lock = &s->reload_lock;
}

int gw_serve_catch_up(struct gw_server *s, struct gw_error *err)
{
    return gw_store_catch_up(s->store, publish, s, err);
}
