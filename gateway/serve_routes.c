/* The read-only endpoints of `shardgate serve`: ring, lookup, shards, batches, probes, metrics. */
#include "serve.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "membership.h"
#include "receipt.h"

static enum MHD_Result json_ok(struct gw_req *r, unsigned status, struct gw_buf *body)
{
    return gw_serve_respond(r, status, "application/json", body, NULL, NULL);
}

static enum MHD_Result no_online_shard(struct gw_req *r)
{
    return gw_serve_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "no_online_shard",
                          "no online shard: the ring is empty and cannot place keys", "", NULL,
                          NULL);
}

static enum MHD_Result get_ring(struct gw_req *r)
{
    const char *points = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "points");
    int with_points = points && (strcmp(points, "1") == 0 || strcmp(points, "true") == 0);
    if (points && !with_points && strcmp(points, "0") != 0 && strcmp(points, "false") != 0)
        return gw_serve_error(r, MHD_HTTP_BAD_REQUEST, "invalid_parameter",
                              "points: must be 1, true, 0 or false", "points", NULL, NULL);
    struct gw_buf body;
    gw_buf_init(&body);
    gw_ring_write(&body, &r->srv->topo, with_points);
    gw_buf_puts(&body, "\n");
    return json_ok(r, MHD_HTTP_OK, &body);
}

static enum MHD_Result get_lookup(struct gw_req *r)
{
    const char *key = NULL;
    size_t len = 0;
    if (MHD_lookup_connection_value_n(r->conn, MHD_GET_ARGUMENT_KIND, "key", 3, &key, &len) !=
            MHD_YES ||
        !key || len == 0 || len > GW_KEY_MAX)
        return gw_serve_error(r, MHD_HTTP_BAD_REQUEST, "invalid_parameter",
                              "key: the query parameter key (1..1024 bytes) is required", "key",
                              NULL, NULL);
    struct ring_placement p;
    if (ring_lookup(r->srv->topo.ring, key, len, &p) != 0)
        return no_online_shard(r);
    struct gw_buf body;
    gw_buf_init(&body);
    gw_lookup_write(&body, &r->srv->topo, key, len, &p);
    gw_buf_puts(&body, "\n");
    return json_ok(r, MHD_HTTP_OK, &body);
}

static enum MHD_Result get_shards(struct gw_req *r)
{
    const struct gw_membership *m = &r->srv->topo.members;
    struct gw_total *totals = calloc(m->count ? m->count : 1, sizeof(*totals));
    struct gw_buf body;
    gw_buf_init(&body);
    if (!totals)
        body.failed = 1;
    else
        gw_ledger_snapshot(&r->srv->ledger, totals);
    gw_buf_puts(&body, "{\"shards\":[");
    for (size_t i = 0; totals && i < m->count; i++) {
        const struct gw_shard *s = &m->shards[i];
        gw_buf_puts(&body, i ? ",{\"id\":" : "{\"id\":");
        gw_buf_json_string(&body, s->id, s->id_len);
        gw_buf_puts(&body, ",\"state\":\"");
        gw_buf_puts(&body, gw_state_name(s->state));
        gw_buf_field_u64(&body, "\",\"weight\":", s->weight);
        gw_buf_field_u64(&body, ",\"capacity\":", s->capacity);
        /* Exact big integers, never wrapped (docs/api.md, GET /v1/shards). */
        gw_buf_field_u128(&body, ",\"load_total\":", totals[i].load);
        gw_buf_field_u128(&body, ",\"received_total\":", totals[i].received);
        gw_buf_puts(&body, "}");
    }
    gw_buf_puts(&body, "]}\n");
    free(totals);
    return json_ok(r, MHD_HTTP_OK, &body);
}

/* Reads a stored receipt out of the journal into `body`, followed by a newline. */
int gw_serve_stored_receipt(struct gw_server *s, struct gw_idem_ref ref, struct gw_buf *body)
{
    int rc = gw_buf_reserve(body, ref.len + 1);
    if (rc == 0)
        rc = gw_journal_read(&s->journal, ref.offset, ref.len, body->data + body->len);
    if (rc != 0)
        return rc;
    body->len += ref.len;
    gw_buf_puts(body, "\n");
    return body->failed ? -ENOMEM : 0;
}

static enum MHD_Result get_batch(struct gw_req *r, const char *id)
{
    struct gw_idem_ref ref;
    size_t len = strlen(id);
    char msg[200];
    if (!gw_name_valid(id, len, GW_BATCH_ID_MAX) || gw_idem_find(&r->srv->idem, id, len, &ref)) {
        snprintf(msg, sizeof(msg), "no stored receipt for batch_id \"%.128s\"", id);
        return gw_serve_error(r, MHD_HTTP_NOT_FOUND, "not_found", msg, "batch_id", NULL, NULL);
    }
    snprintf(r->batch_id, sizeof(r->batch_id), "%s", id);
    struct gw_buf body;
    gw_buf_init(&body);
    if (gw_serve_stored_receipt(r->srv, ref, &body) != 0) {
        gw_buf_free(&body);
        return gw_serve_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
                              "cannot read the stored receipt from the journal", "", NULL, NULL);
    }
    return json_ok(r, MHD_HTTP_OK, &body);
}

static enum MHD_Result get_probe(struct gw_req *r, int ready_probe)
{
    struct gw_server *s = r->srv;
    struct gw_buf body;
    gw_buf_init(&body);
    if (!ready_probe) {
        gw_buf_puts(&body, "{\"status\":\"live\"}\n");
        return json_ok(r, MHD_HTTP_OK, &body);
    }
    int replayed = atomic_load(&s->replayed), failed = gw_committer_failed(&s->committer);
    int ring = ring_points_total(s->topo.ring) > 0;
    int ready = replayed && !failed && ring;
    gw_buf_puts(&body, ready ? "{\"status\":\"ready\"" : "{\"status\":\"unready\"");
    gw_buf_puts(&body, ",\"checks\":{\"journal\":\"");
    gw_buf_puts(&body, !replayed ? "replaying" : failed ? "unavailable" : "ok");
    gw_buf_puts(&body, ring ? "\",\"ring\":\"ok\"}}\n" : "\",\"ring\":\"empty\"}}\n");
    return json_ok(r, ready ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, &body);
}

static enum MHD_Result get_metrics(struct gw_req *r)
{
    struct gw_server *s = r->srv;
    size_t n = s->topo.members.count;
    struct gw_total *totals = calloc(n ? n : 1, sizeof(*totals));
    struct gw_buf body;
    gw_buf_init(&body);
    if (!totals) {
        body.failed = 1;
    } else {
        gw_ledger_snapshot(&s->ledger, totals);
        gw_metrics_render(&body, &s->metrics, &s->topo, totals, gw_serve_ready(s));
    }
    free(totals);
    return gw_serve_respond(r, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", &body, NULL,
                            NULL);
}

enum MHD_Result gw_serve_get(struct gw_req *r, const char *url)
{
    if (!gw_serve_get_authorized(r, url))
        return gw_serve_unauthorized(r);
    if (strcmp(url, "/v1/ring") == 0)
        return get_ring(r);
    if (strcmp(url, "/v1/lookup") == 0)
        return get_lookup(r);
    if (strcmp(url, "/v1/shards") == 0)
        return get_shards(r);
    if (strcmp(url, "/metrics") == 0)
        return get_metrics(r);
    if (strcmp(url, "/livez") == 0 || strcmp(url, "/readyz") == 0)
        return get_probe(r, url[1] == 'r');
    return get_batch(r, url + strlen("/v1/batches/"));
}
