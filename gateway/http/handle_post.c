/* POST /v1/batches: checks before the body, the body read incrementally under the cap, then
 * idempotency, dispatch, and a receipt answered only once the journal has it on disk. */
#include "request.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "http.h"
#include "number.h"
#include "receipt.h"

static enum MHD_Result fail(struct gw_req *r, unsigned status, const char *code, const char *msg,
                            const char *path)
{
    return gw_serve_error(r, status, code, msg, path, NULL, NULL);
}

static const char *header(struct gw_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

/* Everything decided from the headers, before a byte of the body is read. */
static enum MHD_Result begin(struct gw_req *r)
{
    if (!gw_http_is_json(header(r, MHD_HTTP_HEADER_CONTENT_TYPE)))
        return fail(r, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type",
                    "Content-Type must be application/json", "");
    const char *cl = header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
    uint64_t declared = 0;
    if (cl && gw_parse_u64(cl, 0, UINT64_MAX, &declared) == 0 && declared > r->srv->opt.max_body) {
        r->drop = GW_BODY_TOO_LARGE;
        return gw_body_refuse(r);
    }
    if (gw_body_begin(r, declared) != 0)
        return gw_body_budget_exhausted(r);
    /* Room for the whole declared body up front, as the budget holds it: growing by doubling
     * would copy and hold two buffers at once. Pages not yet received are never touched; a
     * chunked body grows as it comes. */
    if (declared > 0)
        gw_buf_reserve(&r->body, (size_t)declared);
    r->phase = GW_PHASE_BODY;
    return MHD_YES;
}

/* A POST /v1/batches from the batch's parse to its answer. */
struct gw_post {
    struct gw_req *r;
    unsigned char fingerprint[GW_FINGERPRINT_LEN];
    struct gw_buf receipt;  /* the receipt bytes (or a replay's), then "\n" once durable */
    struct gw_error damage; /* GW_COMMIT_DAMAGED: the store's answer to it */
    struct gw_tally *tally; /* this batch's per-shard tallies, added when durable */
    struct gw_commit_item item;
    atomic_int committed; /* set by the store's writer before it resumes the connection */
    int commit_rc;
};

/* Frees a POST's batch state, at the request's completion. */
static void post_free(struct gw_req *r)
{
    if (!r->post)
        return;
    gw_buf_free(&r->post->receipt);
    free(r->post->tally);
    free(r->post);
    r->post = NULL;
}

/* The store's completion: make the outcome visible, then wake the connection. */
static void committed(struct gw_commit_item *item, int rc)
{
    struct gw_post *p = (struct gw_post *)((char *)item - offsetof(struct gw_post, item));
    p->commit_rc = rc;
    atomic_store(&p->committed, 1);
    MHD_resume_connection(p->r->conn);
}

/* 503: the store takes no commits now (docs/api.md §2), in the words of the store in use. */
static enum MHD_Result unavailable(struct gw_req *r)
{
    struct gw_store_refusal why;
    gw_store_refusal(r->srv->store, &why);
    return gw_serve_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, why.code, why.error.msg, "",
                          why.retry ? MHD_HTTP_HEADER_RETRY_AFTER : NULL, why.retry ? "1" : NULL);
}

/* 422 over_capacity. Under spill the body also carries the receipt (docs/api.md §2): which
 * changes spilled and which shard had no room, for a refusal the client cannot foresee. */
static enum MHD_Result over_capacity(struct gw_req *r, const struct gw_batch *b,
                                     const struct gw_dispatch *d)
{
    const struct gw_topology *t = &r->view->topo;
    char msg[600];
    size_t n = (size_t)snprintf(msg, sizeof(msg), "refused under DISPATCH_CAPACITY_POLICY=%s:",
                                gw_policy_name(t->contract.policy));
    for (size_t i = 0; i < t->members.count && n < sizeof(msg); i++)
        if (gw_dispatch_over_capacity(t, d, i))
            n += (size_t)snprintf(msg + n, sizeof(msg) - n, " %s load %llu > capacity %llu;",
                                  t->members.shards[i].id, (unsigned long long)d->tally[i].load,
                                  (unsigned long long)t->members.shards[i].capacity);
    if (t->contract.policy != GW_POLICY_SPILL)
        return fail(r, 422, "over_capacity", msg, "");
    struct gw_buf body;
    gw_buf_init(&body);
    const char *type = gw_serve_error_body(r, &body, 422, "over_capacity", msg, "");
    if (!body.failed)
        body.len -= 2; /* reopen the object: drop the closing brace and the newline */
    gw_buf_puts(&body, ",\"receipt\":");
    gw_receipt_write(&body, t, b, d);
    gw_buf_puts(&body, "}\n");
    /* answers 500 internal if an append failed */
    return gw_serve_respond(r, 422, type, &body, NULL, NULL);
}

/* The feed bits of the shards this batch placed on: their watchers are woken by its commit. */
static uint64_t shard_bits(const struct gw_req *r)
{
    const struct gw_membership *m = &r->view->topo.members;
    uint64_t bits = 0;
    for (size_t i = 0; i < m->count; i++)
        if (r->post->tally[i].received > 0)
            bits |= gw_feed_shard_bit(m->shards[i].id, strlen(m->shards[i].id));
    return bits;
}

static enum MHD_Result submit(struct gw_req *r)
{
    r->post->item = (struct gw_commit_item){.receipt = r->post->receipt.data,
                                            .receipt_len = r->post->receipt.len,
                                            .fingerprint = r->post->fingerprint,
                                            .shard_bits = shard_bits(r),
                                            .batch_id = r->batch_id,
                                            .epoch = r->view->topo.epoch,
                                            .members = &r->view->topo.members,
                                            .tally = r->post->tally,
                                            .stored = &r->post->receipt,
                                            .damage = &r->post->damage,
                                            .view_epoch_seq = r->view->epoch_seq,
                                            .slots = r->view->slots,
                                            .done = committed};
    r->phase = GW_PHASE_COMMITTING;
    MHD_suspend_connection(r->conn); /* before submitting: the writer may resume at once */
    gw_store_submit(r->srv->store, &r->post->item);
    return MHD_YES;
}

/* The receipt, NUL-terminated past its length (the PostgreSQL store passes it as text).
 * Returns 0 or -ENOMEM. */
static int write_receipt(struct gw_buf *out, const struct gw_topology *t, const struct gw_batch *b,
                         const struct gw_dispatch *d)
{
    gw_receipt_write(out, t, b, d);
    gw_buf_append(out, "", 1);
    out->len -= !out->failed;
    return out->failed ? -ENOMEM : 0;
}

/* Dispatches a batch this request has claimed; every path that does not journal it releases
 * the claim, so a refused batch leaves no record. */
static enum MHD_Result dispatch(struct gw_req *r, const struct gw_batch *b)
{
    struct gw_server *s = r->srv;
    const struct gw_topology *t = &r->view->topo; /* one ring for the whole batch */
    struct gw_dispatch d;
    struct gw_error err;
    enum MHD_Result ret = MHD_YES;
    int refused = 1, rc = -EIO;
    if (!gw_store_writable(s->store))
        ret = unavailable(r);
    else if ((rc = gw_dispatch_run(t, b, &d, &err)) == -ENOENT)
        ret = fail(r, MHD_HTTP_SERVICE_UNAVAILABLE, "no_online_shard", err.msg, "");
    else if (rc != 0)
        ret = fail(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", err.msg, "");
    else if (!d.ok && d.over_capacity_shards && gw_policy_refuses_over_capacity(t->contract.policy))
        ret = over_capacity(r, b, &d);
    else if (write_receipt(&r->post->receipt, t, b, &d) != 0)
        ret = fail(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory", "");
    else {
        r->over_capacity = d.over_capacity_shards > 0;
        r->post->tally = d.tally; /* kept until the receipt is durable */
        d.tally = NULL;
        refused = 0;
    }
    if (rc == 0)
        gw_dispatch_free(&d);
    if (refused) {
        gw_store_release(s->store, b->batch_id, b->batch_id_len);
        return ret;
    }
    return submit(r);
}

/* What the store said of a batch_id it had seen, at the claim or at the commit (docs/api.md
 * §3): one answer for either store. */
static enum MHD_Result answer_seen(struct gw_req *r, enum gw_commit_verdict verdict)
{
    char msg[400];
    switch (verdict) {
    case GW_COMMIT_REPLAY:
        r->result = GW_RESULT_REPLAYED; /* counted only if the answer is 200 */
        gw_buf_puts(&r->post->receipt, "\n");
        return gw_serve_respond(r, MHD_HTTP_OK, "application/json", &r->post->receipt,
                                "Idempotent-Replayed", "true");
    case GW_COMMIT_DAMAGED:
        return gw_serve_row_damage(r, r->post->damage.msg);
    case GW_COMMIT_EXPIRED:
        snprintf(msg, sizeof(msg),
                 "batch_id \"%s\" was acknowledged longer ago than the idempotency window; it is "
                 "never dispatched again",
                 r->batch_id);
        return fail(r, 422, "batch_id_expired", msg, "batch_id");
    case GW_COMMIT_IN_FLIGHT:
        snprintf(msg, sizeof(msg), "batch_id \"%s\" is being journaled by another request; retry",
                 r->batch_id);
        return fail(r, MHD_HTTP_CONFLICT, "in_flight", msg, "batch_id");
    case GW_COMMIT_NEW: /* never here: its callers dispatch or answer a NEW themselves */
    case GW_COMMIT_REUSED:
        break;
    }
    snprintf(msg, sizeof(msg), "batch_id \"%s\" was already used for a batch with other content",
             r->batch_id);
    return fail(r, 422, "batch_id_reused", msg, "batch_id");
}

/* A valid batch: the Idempotency-Key, then what the idempotency table says. */
static enum MHD_Result decide(struct gw_req *r, const struct gw_batch *b)
{
    const char *key = header(r, "Idempotency-Key");
    char msg[400];
    if (key && (strlen(key) != b->batch_id_len || memcmp(key, b->batch_id, b->batch_id_len))) {
        snprintf(msg, sizeof(msg), "Idempotency-Key \"%.128s\" differs from batch_id \"%s\"", key,
                 r->batch_id);
        return fail(r, MHD_HTTP_BAD_REQUEST, "idempotency_key_mismatch", msg, "batch_id");
    }
    enum gw_commit_verdict verdict;
    struct gw_store_miss miss;
    int rc = gw_store_claim(r->srv->store, b->batch_id, b->batch_id_len, b->fingerprint, &verdict,
                            &r->post->receipt, &miss);
    if (rc == -ENOMEM)
        return fail(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory", "");
    if (rc != 0) /* a replay whose receipt cannot be read, or the index at fault */
        return gw_answer_read(r, r->batch_id, rc, &r->post->receipt, &miss, NULL, NULL);
    return verdict == GW_COMMIT_NEW ? dispatch(r, b) : answer_seen(r, verdict);
}

/* The batch parser names a syntax error "$: invalid JSON ..."; everything else is schema. */
static int is_syntax_error(const struct gw_error *err)
{
    static const char prefix[] = "$: invalid JSON";
    return strcmp(err->path, "$") == 0 && strncmp(err->msg, prefix, sizeof(prefix) - 1) == 0;
}

static enum MHD_Result finish_body(struct gw_req *r)
{
    if (r->drop != GW_BODY_KEPT)
        return gw_body_refuse(r);
    struct gw_batch b;
    struct gw_error err;
    int rc = gw_batch_parse(r->body.data ? r->body.data : "", r->body.len, r->srv->opt.max_changes,
                            &b, &err);
    gw_body_done(r);
    if (rc == -ENOMEM)
        return fail(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory", "");
    if (rc != 0)
        return fail(r, MHD_HTTP_BAD_REQUEST,
                    is_syntax_error(&err) ? "invalid_json" : "invalid_batch", err.msg, err.path);
    r->post = calloc(1, sizeof(*r->post));
    gw_req_on_end(r, post_free);
    if (!r->post) {
        gw_batch_free(&b);
        return fail(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory", "");
    }
    r->post->r = r;
    gw_buf_init(&r->post->receipt);
    atomic_init(&r->post->committed, 0);
    memcpy(r->batch_id, b.batch_id, b.batch_id_len);
    r->batch_id[b.batch_id_len] = '\0';
    r->changes = b.count;
    memcpy(r->post->fingerprint, b.fingerprint, sizeof(r->post->fingerprint));
    enum MHD_Result ret = decide(r, &b);
    gw_batch_free(&b);
    return ret;
}

/* Called again after the journal writer resumed the connection. */
static enum MHD_Result answer(struct gw_req *r)
{
    if (!atomic_load(&r->post->committed)) {
        MHD_suspend_connection(r->conn);
        return MHD_YES;
    }
    if (r->post->commit_rc != 0)
        return unavailable(r);
    if (r->post->item.verdict != GW_COMMIT_NEW)
        return answer_seen(r, r->post->item.verdict);
    gw_buf_puts(&r->post->receipt, "\n");
    enum MHD_Result ret =
        gw_serve_respond(r, MHD_HTTP_OK, "application/json", &r->post->receipt, NULL, NULL);
    if (r->over_capacity && r->status == MHD_HTTP_OK)
        gw_metrics_over_capacity_shards(&r->srv->metrics, &r->view->topo, r->post->tally);
    return ret;
}

enum MHD_Result gw_handle_post_batches(struct gw_req *r, const char *data, size_t *size)
{
    switch (r->phase) {
    case GW_PHASE_NEW:
        return begin(r);
    case GW_PHASE_BODY:
        if (*size == 0)
            return finish_body(r);
        if (gw_body_take(r, data, *size) != MHD_YES)
            return MHD_NO;
        *size = 0;
        return MHD_YES;
    case GW_PHASE_COMMITTING:
        return answer(r);
    case GW_PHASE_ANSWERED:
        break;
    }
    *size = 0;
    return MHD_YES;
}
