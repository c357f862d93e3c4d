/* The endpoints for orchestrators and monitoring: /livez, /readyz and /metrics
 * (docs/api.md §8 to §10). */
#include "request.h"

#include <errno.h>
#include <stdlib.h>

#include "metrics_process.h"

int gw_serve_ready(struct gw_server *s)
{
    if (!atomic_load(&s->replayed) || !gw_store_writable(s->store) ||
        atomic_load(&s->metrics.record_damage) > 0)
        return 0;
    struct gw_view *v = gw_view_acquire(&s->views);
    int ring = ring_shard_count(v->topo.ring) > 0;
    gw_view_unref(v);
    return ring;
}

enum MHD_Result gw_handle_livez(struct gw_req *r, const char *rest)
{
    (void)rest;
    struct gw_buf body;
    gw_buf_init(&body);
    gw_buf_puts(&body, "{\"status\":\"live\"}\n");
    return gw_serve_json(r, MHD_HTTP_OK, &body);
}

enum MHD_Result gw_handle_readyz(struct gw_req *r, const char *rest)
{
    (void)rest;
    struct gw_server *s = r->srv;
    struct gw_buf body;
    gw_buf_init(&body);
    int replayed = atomic_load(&s->replayed), failed = !gw_store_writable(s->store);
    int damaged = atomic_load(&s->metrics.record_damage) > 0;
    int ring = ring_shard_count(r->view->topo.ring) > 0;
    int ready = replayed && !failed && !damaged && ring;
    gw_buf_puts(&body, ready ? "{\"status\":\"ready\"" : "{\"status\":\"unready\"");
    gw_buf_puts(&body, ",\"checks\":{\"");
    gw_buf_puts(&body, gw_store_check_name(s->store));
    gw_buf_puts(&body, "\":\"");
    gw_buf_puts(&body, !replayed ? "replaying"
                       : failed  ? "unavailable"
                       : damaged ? "damaged"
                                 : "ok");
    gw_buf_puts(&body, ring ? "\",\"ring\":\"ok\"}}\n" : "\",\"ring\":\"empty\"}}\n");
    return gw_serve_json(r, ready ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, &body);
}

/* The store's per-shard totals of the view's members: 0, -EAGAIN (the store cannot be read
 * now: the scrape still answers, with shardgate_store_up 0) or -ENOMEM. */
static int member_totals(struct gw_req *r, struct gw_total **out)
{
    const struct gw_topology *t = &r->view->topo;
    struct gw_total *totals = calloc(t->members.count ? t->members.count : 1, sizeof(*totals));
    struct gw_error err;
    int rc = totals
                 ? gw_store_member_totals(r->srv->store, &t->members, r->view->slots, totals, &err)
                 : -ENOMEM;
    if (rc != 0) {
        free(totals);
        totals = NULL;
    }
    *out = totals;
    return rc == -EAGAIN || rc == 0 ? rc : -ENOMEM;
}

enum MHD_Result gw_handle_metrics(struct gw_req *r, const char *rest)
{
    (void)rest;
    struct gw_server *s = r->srv;
    struct gw_total *totals;
    struct gw_buf body;
    gw_buf_init(&body);
    if (member_totals(r, &totals) == -ENOMEM) {
        body.failed = 1;
    } else {
        struct gw_feed_figures feed = {
            atomic_load(&s->feed_cache.held),       s->feed_cache.limit,
            atomic_load(&s->feed_cache.refused),    gw_feed_watch_count(gw_store_watch(s->store)),
            gw_store_watch(s->store)->max_watchers, gw_store_feed_head(s->store)};
        gw_metrics_render(&body, &s->metrics, &r->view->topo, totals, gw_serve_ready(s),
                          atomic_load(&s->views.alive), &feed);
        gw_request_metrics_render(&body, &s->requests);
        gw_listener_metrics_render(&body, &s->listener);
        gw_metrics_process(&body, s->started_s);
    }
    free(totals);
    return gw_serve_respond(r, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", &body, NULL,
                            NULL);
}
