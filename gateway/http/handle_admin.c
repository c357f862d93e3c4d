/* PUT /v1/admin/membership (docs/api.md §15): the admin token, If-Match on the current epoch,
 * the shards document read as --shards is, then the one apply path of reload.c. */
#include "request.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "if_match.h"
#include "number.h"

static const char *header(struct gw_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

static enum MHD_Result fail(struct gw_req *r, unsigned status, const char *code, const char *msg,
                            const char *path)
{
    return gw_serve_error(r, status, code, msg, path, NULL, NULL);
}

/* 1 when the request carries the admin bearer token (the client token is not accepted). */
static int admin_authorized(struct gw_req *r)
{
    return gw_serve_bearer_is(r, r->srv->admin_digest);
}

/* ?dry_run=1 (&format=svg), ?max_movement=F (0..1) and &force=1 into rl; a message when one
 * is bad. */
static const char *read_parameters(struct gw_req *r, struct gw_reload *rl)
{
    const char *mm;
    rl->svg = gw_param_svg(r);
    rl->dry_run = gw_param_flag(r, "dry_run");
    if (rl->svg < 0 || (rl->svg && rl->dry_run != 1))
        return "format";
    rl->force = gw_param_flag(r, "force");
    rl->max_movement = -1;
    if (rl->dry_run < 0)
        return "dry_run";
    if (rl->force < 0)
        return "force";
    if (gw_param(r, "max_movement", &mm) != 0 || (mm && gw_parse_fraction(mm, &rl->max_movement)))
        return "max_movement";
    return NULL;
}

/* 403 when no admin token is configured, 401 without it (docs/api.md §15): 1 with *answer
 * queued, else 0. */
static int admin_denied(struct gw_req *r, enum MHD_Result *answer)
{
    char msg[320];
    if (!r->srv->admin_auth) {
        *answer = fail(r, MHD_HTTP_FORBIDDEN, "admin_disabled",
                       "no admin token is configured (--admin-token-file)", "");
        return 1;
    }
    if (admin_authorized(r))
        return 0;
    snprintf(msg, sizeof(msg), "%s needs Authorization: Bearer <admin token>", r->path);
    *answer = gw_serve_error(r, MHD_HTTP_UNAUTHORIZED, "unauthorized", msg, "",
                             MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    return 1;
}

enum MHD_Result gw_handle_admin_membership_get(struct gw_req *r, const char *rest)
{
    (void)rest;
    enum MHD_Result answer;
    if (admin_denied(r, &answer))
        return answer;
    struct gw_buf body;
    char etag[GW_EPOCH_HEX_LEN + 3];
    gw_buf_init(&body);
    gw_buf_puts(&body, "{\"shards\":");
    gw_membership_write(&body, &r->view->topo.members);
    gw_buf_puts(&body, "}\n");
    gw_epoch_etag(etag, r->view->topo.epoch);
    return gw_serve_respond(r, MHD_HTTP_OK, "application/json", &body, MHD_HTTP_HEADER_ETAG, etag);
}

/* Everything decided from the headers: admin enabled, token, If-Match, Content-Type. */
static enum MHD_Result begin(struct gw_req *r)
{
    char msg[320];
    enum MHD_Result answer;
    if (admin_denied(r, &answer))
        return answer;
    struct gw_reload probe;
    const char *bad = read_parameters(r, &probe);
    if (bad) {
        snprintf(msg, sizeof(msg),
                 "%s: dry_run and force take 0 or 1, max_movement a decimal 0..1, format "
                 "json or svg (svg with dry_run=1) (docs/api.md §1.1)",
                 bad);
        return fail(r, MHD_HTTP_BAD_REQUEST, "invalid_parameter", msg, bad);
    }
    const char *if_match = header(r, MHD_HTTP_HEADER_IF_MATCH);
    if (!if_match)
        return fail(r, 428, "precondition_required",
                    "If-Match: \"<current epoch>\" is required (GET /v1/ring names it)", "");
    if (gw_if_match_parse(if_match) != 0)
        return fail(r, MHD_HTTP_BAD_REQUEST, "invalid_parameter",
                    "If-Match: not \"*\" or a list of entity tags such as \"<current epoch>\" "
                    "(RFC 9110)",
                    "If-Match");
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
    r->phase = GW_PHASE_BODY;
    return MHD_YES;
}

/* 412: the error body plus the current epoch, and its ETag. */
static enum MHD_Result stale(struct gw_req *r, const struct gw_reload *rl, const char *msg)
{
    struct gw_buf body;
    char etag[GW_EPOCH_HEX_LEN + 3];
    gw_buf_init(&body);
    const char *type =
        gw_serve_error_body(r, &body, MHD_HTTP_PRECONDITION_FAILED, "epoch_mismatch", msg, "");
    if (body.len >= 2)
        body.len -= 2; /* "}\n" */
    gw_buf_puts(&body, ",\"epoch\":\"");
    gw_buf_puts(&body, rl->entry.epoch);
    gw_buf_puts(&body, "\"}\n");
    gw_epoch_etag(etag, rl->entry.epoch);
    return gw_serve_respond(r, MHD_HTTP_PRECONDITION_FAILED, type, &body, MHD_HTTP_HEADER_ETAG,
                            etag);
}

/* 422 movement_exceeds_limit: the error body plus the plan. */
static enum MHD_Result too_much_movement(struct gw_req *r, struct gw_buf *plan, const char *msg)
{
    struct gw_buf body;
    gw_buf_init(&body);
    const char *type =
        gw_serve_error_body(r, &body, 422, "movement_exceeds_limit", msg, "max_movement");
    if (body.len >= 2)
        body.len -= 2; /* "}\n" */
    gw_buf_puts(&body, ",\"plan\":");
    gw_buf_append(&body, plan->data ? plan->data : "", plan->len);
    body.failed |= plan->failed;
    gw_buf_puts(&body, "}\n");
    gw_buf_free(plan);
    return gw_serve_respond(r, 422, type, &body, NULL, NULL);
}

static enum MHD_Result applied(struct gw_req *r, const struct gw_reload *rl)
{
    struct gw_buf body;
    char etag[GW_EPOCH_HEX_LEN + 3];
    gw_buf_init(&body);
    gw_buf_puts(&body, rl->verdict == GW_RELOAD_APPLIED ? "{\"changed\":true,\"epoch\":\""
                                                        : "{\"changed\":false,\"epoch\":\"");
    gw_buf_puts(&body, rl->entry.epoch);
    gw_buf_field_u64(&body, "\",\"epoch_seq\":", rl->entry.epoch_seq);
    gw_buf_puts(&body, rl->entry.prev[0] ? ",\"prev\":\"" : ",\"prev\":null");
    if (rl->entry.prev[0]) {
        gw_buf_puts(&body, rl->entry.prev);
        gw_buf_puts(&body, "\"");
    }
    gw_buf_puts(&body, ",\"ring\":\"");
    gw_buf_puts(&body, rl->entry.ring_id);
    gw_buf_puts(&body, "\",\"source\":\"");
    gw_buf_puts(&body, gw_source_name(rl->entry.source));
    gw_buf_puts(&body, "\"}\n");
    gw_epoch_etag(etag, rl->entry.epoch);
    return gw_serve_respond(r, MHD_HTTP_OK, "application/json", &body, MHD_HTTP_HEADER_ETAG, etag);
}

static enum MHD_Result finish_body(struct gw_req *r)
{
    if (r->drop != GW_BODY_KEPT)
        return gw_body_refuse(r);
    struct gw_error err;
    struct gw_membership m;
    /* An early check against the request's view; the epoch is built on the current one. */
    const struct gw_contract *contract = &r->view->topo.contract;
    const char *text = r->body.data ? r->body.data : "";
    int rc = gw_membership_parse(text, r->body.len, r->srv->opt.shards, &m, &err);
    if (rc == 0 && (rc = gw_membership_check_ring(&m, contract, r->srv->opt.shards, &err)))
        gw_membership_free(&m);
    if (rc == -ENOMEM) {
        gw_body_done(r);
        return fail(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory", "");
    }
    if (rc != 0) {
        gw_body_done(r);
        gw_reload_refused(r->srv, GW_SOURCE_ADMIN, &err);
        return fail(r, 422, "invalid_membership", err.msg, err.path);
    }
    struct gw_buf plan;
    gw_buf_init(&plan);
    struct gw_reload rl = {.source = GW_SOURCE_ADMIN,
                           .if_match = header(r, MHD_HTTP_HEADER_IF_MATCH),
                           .shards_text = text,
                           .shards_len = r->body.len,
                           .plan = &plan};
    read_parameters(r, &rl);
    rc = gw_reload_apply(r->srv, &m, &rl, &err);
    gw_body_done(r);
    if (rl.exceeded)
        return too_much_movement(r, &plan, err.msg);
    if (rc == 0 && rl.dry_run && rl.svg)
        return gw_serve_respond(r, MHD_HTTP_OK, GW_SVG_TYPE, &plan, NULL, NULL);
    if (rc == 0 && rl.dry_run) {
        gw_buf_puts(&plan, "\n");
        return gw_serve_json(r, MHD_HTTP_OK, &plan);
    }
    gw_buf_free(&plan);
    if (rl.stale)
        return stale(r, &rl, err.msg);
    if (rl.no_online)
        return fail(r, 422, "no_online_shard", err.msg, "shards");
    if (rc == -EAGAIN)
        return gw_serve_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "store_unavailable", err.msg, "",
                              MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (rc != 0)
        return fail(r,
                    rc == -ENOMEM ? MHD_HTTP_INTERNAL_SERVER_ERROR : MHD_HTTP_SERVICE_UNAVAILABLE,
                    rc == -ENOMEM ? "internal" : "reload_failed", err.msg, "");
    return applied(r, &rl);
}

enum MHD_Result gw_handle_admin_membership(struct gw_req *r, const char *data, size_t *size)
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
    case GW_PHASE_ANSWERED:
        break;
    }
    *size = 0;
    return MHD_YES;
}
