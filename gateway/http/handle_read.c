/* The read-only endpoints of `shardgate serve` over placement and receipts: ring, lookup,
 * shards and stored batches (docs/api.md §4 to §7). */
#include "request.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "if_match.h"
#include "membership.h"
#include "receipt.h"
#include "ring_svg.h"

static enum MHD_Result no_online_shard(struct gw_req *r)
{
    return gw_serve_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "no_online_shard",
                          "no online shard: the ring is empty and cannot place keys", "", NULL,
                          NULL);
}

enum MHD_Result gw_handle_ring(struct gw_req *r, const char *rest)
{
    (void)rest;
    const char *points;
    int bad = gw_param(r, "points", &points) != 0;
    int with_points = points && (strcmp(points, "1") == 0 || strcmp(points, "true") == 0);
    if (bad || (points && !with_points && strcmp(points, "0") != 0 && strcmp(points, "false") != 0))
        return gw_serve_error(r, MHD_HTTP_BAD_REQUEST, "invalid_parameter",
                              "points: must be 1, true, 0 or false", "points", NULL, NULL);
    int svg = gw_param_svg(r);
    if (svg < 0 || (svg && with_points))
        return gw_serve_error(r, MHD_HTTP_BAD_REQUEST, "invalid_parameter",
                              "format: must be json or svg, and svg takes no points", "format",
                              NULL, NULL);
    struct gw_buf ring, body;
    gw_buf_init(&ring);
    gw_buf_init(&body);
    if (svg) { /* the ring drawn (docs/tools.md §1.3) */
        gw_ring_svg(&body, &r->view->topo);
        return gw_serve_respond(r, MHD_HTTP_OK, GW_SVG_TYPE, &body, NULL, NULL);
    }
    gw_ring_write(&ring, &r->view->topo, with_points);
    /* The ring summary with the epoch it belongs to as its first key (docs/api.md §5). */
    gw_buf_puts(&body, "{\"epoch\":\"");
    gw_buf_puts(&body, r->view->topo.epoch);
    gw_buf_puts(&body, "\",");
    body.failed |= ring.failed || ring.len < 2;
    if (!body.failed)
        gw_buf_append(&body, ring.data + 1, ring.len - 1);
    gw_buf_free(&ring);
    gw_buf_puts(&body, "\n");
    char etag[GW_EPOCH_HEX_LEN + 3]; /* what a PUT names in If-Match (docs/api.md §15) */
    gw_epoch_etag(etag, r->view->topo.epoch);
    return gw_serve_respond(r, MHD_HTTP_OK, "application/json", &body, MHD_HTTP_HEADER_ETAG, etag);
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
    if (ring_lookup(r->view->topo.ring, key, len, &p) != 0)
        return no_online_shard(r);
    struct gw_buf body;
    gw_buf_init(&body);
    gw_lookup_write(&body, &r->view->topo, key, len, &p);
    gw_buf_puts(&body, "\n");
    return gw_serve_json(r, MHD_HTTP_OK, &body);
}

/* The state of ledger entry `e` in the current membership, or NULL when it left it. */
static const struct gw_shard *current_shard(const struct gw_membership *m,
                                            const struct gw_ledger_entry *e)
{
    for (size_t lo = 0, hi = m->count; lo < hi;) {
        size_t mid = lo + (hi - lo) / 2;
        const struct gw_shard *s = &m->shards[mid];
        size_t n = s->id_len < e->id_len ? s->id_len : e->id_len;
        int c = memcmp(s->id, e->id, n);
        c = c ? c : (s->id_len > e->id_len) - (s->id_len < e->id_len);
        if (c == 0)
            return s;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Every shard of every epoch, id order: its current state or "removed", totals over all
 * epochs (docs/api.md §7). A removed shard shows its last weight and capacity. */
enum MHD_Result gw_handle_shards(struct gw_req *r, const char *rest)
{
    (void)rest;
    size_t n = 0;
    struct gw_ledger_entry *all = NULL;
    struct gw_error err;
    int rc = gw_store_shard_totals(r->srv->store, &r->view->topo.members, &all, &n, &err);
    if (rc == -EAGAIN)
        return gw_serve_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "store_unavailable", err.msg, "",
                              MHD_HTTP_HEADER_RETRY_AFTER, "1");
    struct gw_buf body;
    gw_buf_init(&body);
    body.failed = rc != 0;
    gw_buf_puts(&body, "{\"shards\":[");
    for (size_t i = 0; all && i < n; i++) {
        const struct gw_ledger_entry *e = &all[i];
        const struct gw_shard *s = current_shard(&r->view->topo.members, e);
        gw_buf_puts(&body, i ? ",{\"id\":" : "{\"id\":");
        gw_buf_json_string(&body, e->id, e->id_len);
        gw_buf_puts(&body, ",\"state\":\"");
        gw_buf_puts(&body, s ? gw_state_name(s->state) : "removed");
        gw_buf_field_u64(&body, "\",\"weight\":", s ? s->weight : e->weight);
        gw_buf_field_u64(&body, ",\"capacity\":", s ? s->capacity : e->capacity);
        /* Exact big integers, never wrapped (docs/api.md, GET /v1/shards). */
        gw_buf_field_u128(&body, ",\"load_total\":", e->total.load);
        gw_buf_field_u128(&body, ",\"received_total\":", e->total.received);
        gw_buf_puts(&body, "}");
    }
    gw_buf_puts(&body, "]}\n");
    free(all);
    return gw_serve_json(r, MHD_HTTP_OK, &body);
}

/* The epoch chain, oldest first (docs/api.md §16). */
enum MHD_Result gw_handle_epochs(struct gw_req *r, const char *rest)
{
    (void)rest;
    struct gw_buf body;
    gw_buf_init(&body);
    gw_chain_write(&body, gw_store_chain(r->srv->store));
    gw_buf_puts(&body, "\n");
    return gw_serve_json(r, MHD_HTTP_OK, &body);
}

/* 410: the receipt is in a segment `shardgate journal archive` moved away (docs/api.md §3,
 * docs/decisions.md §11): the id stays known, never dispatched again, its bytes not served. */
static enum MHD_Result archived(struct gw_req *r, uint64_t seq)
{
    char msg[400];
    struct gw_buf body;
    snprintf(msg, sizeof(msg),
             "the receipt of batch_id \"%s\" (seq %llu) is in an archived journal segment; it is "
             "never dispatched again",
             r->batch_id, (unsigned long long)seq);
    gw_buf_init(&body);
    const char *type = gw_serve_error_body(r, &body, 410, "receipt_archived", msg, "batch_id");
    if (!body.failed)
        body.len -= 2; /* reopen the object */
    gw_buf_field_u64(&body, ",\"seq\":", seq);
    gw_buf_puts(&body, "}\n");
    return gw_serve_respond(r, 410, type, &body, NULL, NULL);
}

enum MHD_Result gw_answer_read(struct gw_req *r, const char *id, int rc, struct gw_buf *body,
                               const struct gw_store_miss *miss, const char *header,
                               const char *value)
{
    char msg[200];
    if (rc == 0) {
        gw_buf_puts(body, "\n");
        return gw_serve_respond(r, MHD_HTTP_OK, "application/json", body, header, value);
    }
    gw_buf_free(body);
    switch (rc) {
    case -ENOENT:
        snprintf(msg, sizeof(msg), "no stored receipt for batch_id \"%.128s\"", id);
        return gw_serve_error(r, MHD_HTTP_NOT_FOUND, "not_found", msg, "batch_id", NULL, NULL);
    case -ESTALE:
        return archived(r, miss->seq);
    case -EBADMSG:
    case -ENOMSG:
    case -EILSEQ:
        return gw_serve_record_damage(r, miss->segment, miss->line, miss->seq, rc);
    case -EUCLEAN:
        return gw_serve_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "index_corrupt", miss->error.msg,
                              "", NULL, NULL);
    case -EXDEV:
        return gw_serve_index_mismatch(r, id, miss);
    case -EBADE:
        return gw_serve_row_damage(r, miss->error.msg);
    case -EAGAIN:
        return gw_serve_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "store_unavailable", miss->error.msg,
                              "", "Retry-After", "1");
    default:
        return gw_serve_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
                              "cannot read the stored receipt", "", NULL, NULL);
    }
}

enum MHD_Result gw_handle_batch(struct gw_req *r, const char *id)
{
    size_t len = strlen(id);
    struct gw_buf body;
    struct gw_store_miss miss;
    gw_buf_init(&body);
    int rc = gw_name_valid(id, len, GW_BATCH_ID_MAX)
                 ? gw_store_read_receipt(r->srv->store, id, len, &body, &miss)
                 : -ENOENT;
    if (rc != -ENOENT && rc != -EUCLEAN && rc != -EAGAIN) /* a stored batch: logged by its id */
        snprintf(r->batch_id, sizeof(r->batch_id), "%s", id);
    return gw_answer_read(r, id, rc, &body, &miss, NULL, NULL);
}
