/* GET /v1/moves (docs/api.md §20): after each membership change, the ranges of the hash space
 * that moved and between which shards, derived from the two epochs' records on demand
 * (docs/decisions.md §61). */
#include "request.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "chain.h"
#include "plan.h"
#include "store.h"
#include "topology.h"

#define MOVES_LIMIT_MAX 100
#define MOVES_LIMIT_DEFAULT 10

/* A shard's view of the plan: the ranges it gives and those it takes (docs/api.md §20). */
static void write_shard_view(struct gw_buf *out, const struct gw_plan *p, const char *id,
                             size_t len)
{
    gw_buf_puts(out, ",\"from_epoch\":\"");
    gw_buf_puts(out, p->from_epoch);
    gw_buf_puts(out, "\",\"to_epoch\":\"");
    gw_buf_puts(out, p->to_epoch);
    gw_buf_puts(out, "\",\"shard\":");
    gw_buf_json_string(out, id, len);
    for (int way = 0; way < 2; way++) { /* outgoing, then incoming */
        gw_buf_puts(out, way ? "],\"incoming\":[" : ",\"outgoing\":[");
        int n = 0;
        for (size_t i = 0; i < p->range_count; i++) {
            const struct gw_plan_range *g = &p->ranges[i];
            const struct gw_plan_shard *self = &p->shards[way ? g->to : g->from];
            const struct gw_plan_shard *other = &p->shards[way ? g->from : g->to];
            if (self->id_len != len || memcmp(self->id, id, len) != 0)
                continue;
            gw_buf_field_u64(out, n++ ? ",{\"lo\":" : "{\"lo\":", g->lo);
            gw_buf_field_u64(out, ",\"hi\":", g->hi);
            gw_buf_puts(out, way ? ",\"from\":" : ",\"to\":");
            gw_buf_json_string(out, other->id, other->id_len);
            gw_buf_puts(out, "}");
        }
    }
    gw_buf_puts(out, "]}");
}

/* One epoch's topology as read from the store, or why it could not be. */
struct loaded {
    uint64_t epoch_seq; /* 0: nothing loaded */
    int rc;
    struct gw_topology topo; /* when rc == 0 */
    struct gw_error err;     /* when rc != 0 */
};

static void unload(struct loaded *l)
{
    if (l->epoch_seq && l->rc == 0)
        gw_topology_free(&l->topo);
    l->epoch_seq = 0;
}

static void load(struct gw_store *store, const struct gw_epoch_entry *e, struct loaded *l)
{
    unload(l);
    l->epoch_seq = e->epoch_seq;
    l->rc = gw_store_epoch_topology(store, e, &l->topo, &l->err);
}

/* 1 when the store could not be read at all (the answer is an error, not an item). */
static int unreadable(int rc)
{
    return rc == -ENOMEM || rc == -EAGAIN || rc == -EBADMSG;
}

/* The item of the change to epoch `b` from `a`, both loaded: the plan with its ranges (with
 * `shard`, that shard's view of it), or `plan` null and why. Returns 0, -ENOMEM, or -EAGAIN /
 * -EBADMSG (the store could not be read: err set). */
static int write_item(const struct gw_epoch_entry *a, const struct gw_epoch_entry *b,
                      const struct loaded *from, const struct loaded *to, const char *shard,
                      size_t shard_len, struct gw_buf *out, struct gw_error *err)
{
    struct gw_plan p;
    int rc = from->rc ? from->rc : to->rc;
    if (rc)
        *err = from->rc ? from->err : to->err;
    else
        rc = gw_plan_compute(&from->topo, &to->topo, 1, &p, err);
    if (unreadable(rc))
        return rc;
    gw_buf_field_u64(out, "{\"type\":\"moves\",\"from_epoch_seq\":", a->epoch_seq);
    gw_buf_field_u64(out, ",\"epoch_seq\":", b->epoch_seq);
    if (rc == 0 && shard) {
        write_shard_view(out, &p, shard, shard_len);
        gw_plan_free(&p);
    } else if (rc == 0) {
        size_t at = out->len;
        gw_plan_write(out, &p);
        if (!out->failed)
            out->data[at] = ','; /* the plan's members continue the item */
        gw_plan_free(&p);
    } else {
        gw_buf_puts(out, ",\"from_epoch\":\"");
        gw_buf_puts(out, a->epoch);
        gw_buf_puts(out, "\",\"to_epoch\":\"");
        gw_buf_puts(out, b->epoch);
        gw_buf_puts(out, "\",\"plan\":null,\"reason\":");
        gw_buf_json_string(out, err->msg, strlen(err->msg));
        gw_buf_puts(out, "}");
    }
    return out->failed ? -ENOMEM : 0;
}

static enum MHD_Result bad_parameter(struct gw_req *r, const char *name, const char *what)
{
    char msg[160];
    snprintf(msg, sizeof(msg), "%s: %s", name, what);
    return gw_serve_error(r, MHD_HTTP_BAD_REQUEST, "invalid_parameter", msg, name, NULL, NULL);
}

/* The page of changes after the cursor, of the whole space or of one shard. */
static enum MHD_Result serve_moves(struct gw_req *r, const char *shard, size_t shard_len)
{
    uint64_t after, limit;
    if (gw_param_u64(r, "after", 0, INT64_MAX, 0, &after) != 0)
        return bad_parameter(r, "after", "must be an integer 0..9223372036854775807");
    if (gw_param_u64(r, "limit", 1, MOVES_LIMIT_MAX, MOVES_LIMIT_DEFAULT, &limit) != 0)
        return bad_parameter(r, "limit", "must be an integer 1..100");
    struct gw_epoch_chain *chain = gw_store_chain(r->srv->store);
    struct gw_epoch_entry latest = {.epoch_seq = 0}, a, b;
    gw_chain_latest(chain, &latest);
    uint64_t last = after < latest.epoch_seq ? after : latest.epoch_seq;
    struct gw_buf body;
    struct gw_error err = {{0}, {0}};
    gw_buf_init(&body);
    gw_buf_puts(&body, "{\"items\":[");
    int rc = 0, items = 0;
    struct loaded l[2] = {{.epoch_seq = 0}, {.epoch_seq = 0}}; /* by epoch_seq % 2 */
    for (uint64_t seq = last + 1; rc == 0 && seq <= latest.epoch_seq && seq - after <= limit;
         seq++) {
        if (seq >= 2 && gw_chain_at(chain, seq - 1, &a) && gw_chain_at(chain, seq, &b)) {
            struct loaded *from = &l[(seq - 1) % 2], *to = &l[seq % 2];
            if (from->epoch_seq != a.epoch_seq) /* the first of the page: each record read once */
                load(r->srv->store, &a, from);
            load(r->srv->store, &b, to);
            if (items++)
                gw_buf_puts(&body, ",");
            rc = write_item(&a, &b, from, to, shard, shard_len, &body, &err);
        }
        if (rc == 0)
            last = seq;
    }
    unload(&l[0]);
    unload(&l[1]);
    gw_buf_field_u64(&body, "],\"last_epoch_seq\":", last);
    gw_buf_puts(&body, "}\n");
    if (rc == 0 && !body.failed)
        return gw_serve_json(r, MHD_HTTP_OK, &body);
    gw_buf_free(&body);
    if (rc == -EAGAIN)
        return gw_serve_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "store_unavailable", err.msg, "",
                              "Retry-After", "1");
    if (rc == -EBADMSG)
        return gw_serve_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "record_corrupt", err.msg, "",
                              NULL, NULL);
    return gw_serve_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory", "", NULL,
                          NULL);
}

enum MHD_Result gw_handle_moves(struct gw_req *r, const char *rest)
{
    (void)rest;
    return serve_moves(r, NULL, 0);
}

enum MHD_Result gw_handle_shard_moves(struct gw_req *r, const char *id, size_t len)
{
    return serve_moves(r, id, len);
}
