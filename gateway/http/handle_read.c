/* The read-only endpoints of `shardgate serve` over placement and receipts: ring, lookup,
 * shards and stored batches (docs/api.md §4 to §7). */
#include "request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "membership.h"
#include "receipt.h"

static enum MHD_Result no_online_shard(struct gw_req *r)
{
    return gw_serve_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "no_online_shard",
                          "no online shard: the ring is empty and cannot place keys", "", NULL,
                          NULL);
}

enum MHD_Result gw_handle_ring(struct gw_req *r, const char *rest)
{
    (void)rest;
    const char *points = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "points");
    int with_points = points && (strcmp(points, "1") == 0 || strcmp(points, "true") == 0);
    if (points && !with_points && strcmp(points, "0") != 0 && strcmp(points, "false") != 0)
        return gw_serve_error(r, MHD_HTTP_BAD_REQUEST, "invalid_parameter",
                              "points: must be 1, true, 0 or false", "points", NULL, NULL);
    struct gw_buf body;
    gw_buf_init(&body);
    gw_ring_write(&body, &r->srv->topo, with_points);
    gw_buf_puts(&body, "\n");
    return gw_serve_json(r, MHD_HTTP_OK, &body);
}

enum MHD_Result gw_handle_lookup(struct gw_req *r, const char *rest)
{
    (void)rest;
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
    return gw_serve_json(r, MHD_HTTP_OK, &body);
}

enum MHD_Result gw_handle_shards(struct gw_req *r, const char *rest)
{
    (void)rest;
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
    return gw_serve_json(r, MHD_HTTP_OK, &body);
}

/* The stored receipt and a newline, read from the journal (docs/api.md §3 and §4). */
enum MHD_Result gw_answer_stored_receipt(struct gw_req *r, struct gw_idem_ref ref,
                                         const char *header, const char *value)
{
    struct gw_buf body;
    gw_buf_init(&body);
    if (gw_journal_copy(&r->srv->journal, ref.offset, ref.len, &body) != 0) {
        gw_buf_free(&body);
        return gw_serve_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
                              "cannot read the stored receipt from the journal", "", NULL, NULL);
    }
    gw_buf_puts(&body, "\n");
    return gw_serve_respond(r, MHD_HTTP_OK, "application/json", &body, header, value);
}

enum MHD_Result gw_handle_batch(struct gw_req *r, const char *id)
{
    struct gw_idem_ref ref;
    size_t len = strlen(id);
    char msg[200];
    if (!gw_name_valid(id, len, GW_BATCH_ID_MAX) || gw_idem_find(&r->srv->idem, id, len, &ref)) {
        snprintf(msg, sizeof(msg), "no stored receipt for batch_id \"%.128s\"", id);
        return gw_serve_error(r, MHD_HTTP_NOT_FOUND, "not_found", msg, "batch_id", NULL, NULL);
    }
    snprintf(r->batch_id, sizeof(r->batch_id), "%s", id);
    return gw_answer_stored_receipt(r, ref, NULL, NULL);
}
