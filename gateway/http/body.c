/* The body of POST /v1/batches while it is read: the --max-body cap, the in-flight budget
 * every body shares (--max-body-inflight) and the whole-body deadline (--body-timeout);
 * docs/api.md §3 and §3.1, docs/operations.md §5.3. */
#include "request.h"

#include <errno.h>
#include <stdio.h>

#include "timing.h"

#define RETRY_AFTER_S "1"

static enum MHD_Result fail(struct gw_req *r, unsigned status, const char *code, const char *msg)
{
    return gw_serve_error(r, status, code, msg, "", NULL, NULL);
}

/* Takes `bytes` more of the budget for this request; -EBUSY (nothing taken) past it. */
static int charge(struct gw_req *r, uint64_t bytes)
{
    struct gw_server *s = r->srv;
    gw_req_on_end(r, gw_body_release); /* what is charged is given back at the latest then */
    uint64_t total = atomic_fetch_add(&s->body_inflight, bytes) + bytes;
    if (total > s->opt.max_body_inflight) {
        atomic_fetch_sub(&s->body_inflight, bytes);
        return -EBUSY;
    }
    r->charged += bytes;
    return 0;
}

static void uncharge(struct gw_req *r)
{
    atomic_fetch_sub(&r->srv->body_inflight, r->charged);
    r->charged = 0;
}

/* The connection's idle timeout, cut to what is left of the body deadline, so a body that
 * trickles or stalls is closed by it. */
static void limit_idle_timeout(struct gw_req *r, uint64_t now)
{
    uint64_t left =
        r->deadline_ns > now ? (r->deadline_ns - now + 999999999ULL) / 1000000000ULL : 1;
    unsigned idle = r->srv->opt.timeout_s;
    r->deadline_armed = left <= idle;
    MHD_set_connection_option(r->conn, MHD_CONNECTION_OPTION_TIMEOUT,
                              left < idle ? (unsigned)left : idle);
}

int gw_body_begin(struct gw_req *r, uint64_t declared)
{
    uint64_t now = gw_now_ns();
    r->deadline_ns = now + (uint64_t)r->srv->opt.body_timeout_s * 1000000000ULL;
    if (declared > 0 && charge(r, declared) != 0)
        return -EBUSY;
    limit_idle_timeout(r, now);
    return 0;
}

/* From now on the body is read and dropped; what is held goes back to the budget. */
static void start_dropping(struct gw_req *r, enum gw_body_drop why)
{
    r->drop = why;
    r->dropped = r->body.len;
    gw_body_release(r);
}

/* Keeps `size` more bytes, or says why not. */
static void keep(struct gw_req *r, const char *data, size_t size)
{
    if (r->body.len + size > r->srv->opt.max_body)
        return start_dropping(r, GW_BODY_TOO_LARGE);
    uint64_t held = r->body.len + size;
    if (held > r->charged && charge(r, held - r->charged) != 0)
        return start_dropping(r, GW_BODY_OVER_BUDGET);
    gw_buf_append(&r->body, data, size);
    if (r->body.failed) /* never parse the prefix received before it */
        start_dropping(r, GW_BODY_NO_MEMORY);
}

/* A dropped body is read to its end to be answered — libmicrohttpd 0.9.75 cannot answer
 * before — but only up to twice --max-body: past that the connection is closed without an
 * answer. So is a body still incomplete at its deadline. */
enum MHD_Result gw_body_take(struct gw_req *r, const char *data, size_t size)
{
    uint64_t now = gw_now_ns();
    unsigned cut = 0;
    if (now >= r->deadline_ns)
        cut = MHD_HTTP_REQUEST_TIMEOUT;
    else if (r->drop == GW_BODY_KEPT)
        keep(r, data, size);
    else
        r->dropped += size;
    if (!cut && r->drop != GW_BODY_KEPT && r->dropped > 2 * r->srv->opt.max_body)
        cut = r->drop == GW_BODY_TOO_LARGE ? MHD_HTTP_CONTENT_TOO_LARGE
                                           : MHD_HTTP_SERVICE_UNAVAILABLE;
    if (!cut) {
        limit_idle_timeout(r, now);
        return MHD_YES;
    }
    r->status = cut; /* for the log line; no answer can be sent */
    gw_serve_count(r);
    gw_body_release(r);
    return MHD_NO;
}

/* A body where none is expected is read and dropped, but not without end: past --max-body or
 * --body-timeout (counted from the first byte) the connection is closed. */
enum MHD_Result gw_body_ignore(struct gw_req *r, size_t size)
{
    uint64_t now = gw_now_ns();
    if (!r->deadline_ns)
        r->deadline_ns = now + (uint64_t)r->srv->opt.body_timeout_s * 1000000000ULL;
    r->dropped += size;
    unsigned cut = now >= r->deadline_ns               ? MHD_HTTP_REQUEST_TIMEOUT
                   : r->dropped > r->srv->opt.max_body ? MHD_HTTP_CONTENT_TOO_LARGE
                                                       : 0;
    if (!cut)
        return MHD_YES;
    r->status = cut; /* for the log line; no answer can be sent */
    gw_serve_count(r);
    return MHD_NO;
}

enum MHD_Result gw_body_budget_exhausted(struct gw_req *r)
{
    char msg[160];
    snprintf(msg, sizeof(msg),
             "request bodies in flight would exceed --max-body-inflight %llu bytes; retry",
             (unsigned long long)r->srv->opt.max_body_inflight);
    return gw_serve_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "body_budget_exhausted", msg, "",
                          MHD_HTTP_HEADER_RETRY_AFTER, RETRY_AFTER_S);
}

enum MHD_Result gw_body_refuse(struct gw_req *r)
{
    char msg[128];
    gw_body_done(r);
    switch (r->drop) {
    case GW_BODY_OVER_BUDGET:
        return gw_body_budget_exhausted(r);
    case GW_BODY_NO_MEMORY:
        return fail(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
                    "out of memory while reading the request body");
    default:
        snprintf(msg, sizeof(msg), "request body exceeds --max-body %llu bytes",
                 (unsigned long long)r->srv->opt.max_body);
        return fail(r, MHD_HTTP_CONTENT_TOO_LARGE, "payload_too_large", msg);
    }
}

void gw_body_release(struct gw_req *r)
{
    gw_buf_free(&r->body);
    uncharge(r);
}

void gw_body_done(struct gw_req *r)
{
    gw_body_release(r);
    /* The next request on the connection gets the usual idle timeout. */
    MHD_set_connection_option(r->conn, MHD_CONNECTION_OPTION_TIMEOUT, r->srv->opt.timeout_s);
}
