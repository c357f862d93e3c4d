/* The assignment feed (docs/api.md §17, §18): GET /v1/receipts and
 * GET /v1/shards/{id}/assignments. A request with nothing to send yet is suspended (never a
 * thread blocked) until the journal writer makes a receipt after its cursor durable, or until
 * wait_ms has passed. */
#include "request.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feed_assignments.h"
#include "feed_cache.h"
#include "feed_render.h"
#include "http.h"
#include "membership.h"
#include "number.h"
#include "timing.h"

#define FEED_LIMIT_DEFAULT 1000
#define FEED_LIMIT_MAX 100000
#define FEED_WAIT_MAX_MS 30000
#define FEED_BODY_MAX (1u << 20)   /* an answer stops growing past this: bounded per watcher */
#define FEED_SCAN_MAX (64u << 20)  /* record bytes one answer reads before it answers a bookmark */
#define FEED_PG_SCAN_RECEIPTS 4096 /* --store postgres: receipts one shard feed read fetches */

struct gw_feed_req {
    struct gw_feed_waiter waiter; /* first: the wake callback finds the request from it */
    struct gw_req *r;
    struct gw_feed_mark pos;   /* where the last read stopped: a re-read after a wake seeks there */
    struct gw_feed_question q; /* stream, form, limit and the cursor (q.after), which moves over
                                  receipts without a match while waiting */
};

/* One read's collection. */
struct collect {
    struct gw_feed_req *fr;
    struct gw_feed_out out;
    uint64_t scanned;
};

static void wake(struct gw_feed_waiter *w)
{
    struct gw_feed_req *fr = (struct gw_feed_req *)w;
    MHD_resume_connection(fr->r->conn);
}

static void suspend(void *arg)
{
    MHD_suspend_connection(arg);
}

/* A page ends at its limit, past FEED_BODY_MAX bytes, or with a long receipt (one per page). */
static int full(const struct collect *c)
{
    return c->out.items >= c->fr->q.limit || gw_feed_out_size(&c->out) >= FEED_BODY_MAX ||
           gw_feed_long_held(&c->out.whole) || c->scanned >= FEED_SCAN_MAX;
}

/* A page growing past FEED_BODY_MAX (one large receipt) counts against --feed-memory while it
 * is built: 0 when `more` bytes on top of it do not fit, so nothing more is rendered. */
static int room_to_grow(struct collect *c, size_t more)
{
    size_t len = c->out.body.len + more;
    return len <= FEED_BODY_MAX || gw_feed_cache_room(&c->fr->r->srv->feed_cache, len);
}

/* The bytes a record adds to the page held in memory, at most: a long receipt sent whole stays
 * in its file; an assignment page is smaller than its receipt. */
static size_t held_for(const struct collect *c, const struct gw_feed_record *rec)
{
    return (rec->whole && !c->fr->q.shard_len ? 0 : rec->len) + 64;
}

static int visit(void *ctx, const struct gw_feed_record *rec)
{
    struct collect *c = ctx;
    c->scanned += rec->len;
    if (!room_to_grow(c, held_for(c, rec)))
        return -ENOSPC;
    int rc = 0;
    if (rec->kind == GW_FEED_EPOCH)
        gw_feed_out_item(&c->out, "epoch", rec->line, rec->len, 0);
    else if (c->fr->q.shard_len)
        rc = gw_feed_out_assignments(&c->out, rec, c->fr->q.shard, c->fr->q.shard_len);
    else if (rec->whole)
        rc = gw_feed_out_long(&c->out, "receipt", rec->whole, rec->seq);
    else
        gw_feed_out_item(&c->out, "receipt", rec->line, rec->len, rec->seq);
    if (rc == 0 && c->out.body.failed)
        rc = -ENOMEM;
    return rc < 0 ? rc : rec->kind == GW_FEED_EPOCH ? 0 : full(c);
}

/* 410: the cursor is older than the oldest segment present (docs/api.md §17). */
static enum MHD_Result gone(struct gw_req *r, uint64_t earliest)
{
    char msg[160];
    struct gw_buf body;
    snprintf(msg, sizeof(msg),
             "after: older than the oldest journal segment present; resume "
             "from after=%llu or later",
             (unsigned long long)(earliest - 1));
    gw_buf_init(&body);
    const char *type = gw_serve_error_body(r, &body, 410, "cursor_expired", msg, "after");
    if (!body.failed)
        body.len -= 2; /* reopen the object */
    gw_buf_field_u64(&body, ",\"earliest_seq\":", earliest);
    gw_buf_puts(&body, "}\n");
    return gw_serve_respond(r, 410, type, &body, NULL, NULL);
}

/* With --store postgres: the receipts one read fetches. A shard's feed reads more, as most
 * receipts place nothing on it (the bookmark moves over them). */
static size_t page_receipts(const struct gw_feed_req *fr)
{
    return fr->q.shard_len ? FEED_PG_SCAN_RECEIPTS : fr->q.limit;
}

static enum MHD_Result answer(struct gw_req *r, struct gw_feed_req *fr, struct gw_feed_body *page)
{
    return gw_serve_respond_page(r, gw_feed_form_type(fr->q.form), page,
                                 MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
}

/* The page another consumer's same question made, if there is one; 1 when it answered. */
static int answer_cached(struct gw_req *r, struct gw_feed_req *fr, enum MHD_Result *ret)
{
    uint64_t last;
    struct gw_feed_body *page = gw_feed_cache_get(&r->srv->feed_cache, &fr->q, &last);
    if (!page)
        return 0;
    gw_metrics_feed_page(&r->srv->metrics, GW_FEED_SOURCE_SHARED);
    *ret = answer(r, fr, page);
    return 1;
}

/* 503: the pages held by answers fill --feed-memory (docs/api.md §17). */
static enum MHD_Result memory_full(struct gw_req *r)
{
    char msg[200];
    snprintf(msg, sizeof(msg),
             "feed pages being sent hold --feed-memory (%zu bytes); retry when they are sent",
             r->srv->feed_cache.limit);
    return gw_serve_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "feed_memory_exhausted", msg, "",
                          MHD_HTTP_HEADER_RETRY_AFTER, "1");
}

/* The rendered page as a shared body (kept for the same question when it holds an item). */
static enum MHD_Result answer_made(struct gw_req *r, struct gw_feed_req *fr, struct collect *c,
                                   uint64_t last)
{
    if (c->out.body.failed) {
        gw_feed_out_free(&c->out);
        return gw_serve_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory", "",
                              NULL, NULL);
    }
    struct gw_feed_body *page =
        gw_feed_cache_make(&r->srv->feed_cache, &fr->q, &c->out, last, c->out.items > 0);
    if (!page)
        return memory_full(r);
    gw_metrics_feed_page(&r->srv->metrics, GW_FEED_SOURCE_READ);
    return answer(r, fr, page);
}

/* Reads what there is; answers it, or suspends the request to wait for more. */
static enum MHD_Result serve_page(struct gw_req *r, struct gw_feed_req *fr)
{
    enum MHD_Result ret;
    if (answer_cached(r, fr, &ret))
        return ret;
    if (!gw_feed_cache_room(&r->srv->feed_cache, 1))
        return memory_full(r); /* nothing read: the total is already held */
    struct collect c = {.fr = fr, .out = {.form = fr->q.form}};
    uint64_t last = fr->q.after;
    struct gw_store_miss miss = {0};
    gw_feed_out_begin(&c.out);
    int rc = gw_store_feed_read(r->srv->store, fr->q.after, page_receipts(fr), visit, &c, &fr->pos,
                                &last, &miss);
    if (rc == 0 && c.out.items == 0) {
        fr->q.after = last; /* a bookmark: receipts without a match are passed over */
        fr->waiter.after = last;
        if (gw_feed_watch_wait(gw_store_watch(r->srv->store), &fr->waiter, suspend, r->conn)) {
            gw_feed_out_free(&c.out);
            return MHD_YES;
        }
    }
    if (rc == -ENOSPC) {
        gw_feed_out_free(&c.out);
        return memory_full(r);
    }
    if (rc == -ESTALE) {
        gw_feed_out_free(&c.out);
        return gone(r, miss.earliest);
    }
    if (rc == -EBADMSG || rc == -ENOMSG) { /* a damaged line: no page holds any of it */
        gw_feed_out_free(&c.out);
        return gw_serve_record_damage(r, miss.segment, miss.line, miss.seq, rc);
    }
    if (rc == -EBADE) { /* a damaged database row (--store postgres) */
        gw_feed_out_free(&c.out);
        return gw_serve_row_damage(r, miss.error.msg);
    }
    if (rc == -EAGAIN) {
        gw_feed_out_free(&c.out);
        return gw_serve_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "store_unavailable", miss.error.msg,
                              "", MHD_HTTP_HEADER_RETRY_AFTER, "1");
    }
    if (rc != 0) {
        gw_feed_out_free(&c.out);
        return gw_serve_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
                              rc == -ENOMEM ? "out of memory" : "cannot read the journal", "", NULL,
                              NULL);
    }
    gw_feed_out_end(&c.out, last);
    return answer_made(r, fr, &c, last);
}

static enum MHD_Result bad_parameter(struct gw_req *r, const char *name, const char *what)
{
    char msg[160];
    snprintf(msg, sizeof(msg), "%s: %s", name, what);
    return gw_serve_error(r, MHD_HTTP_BAD_REQUEST, "invalid_parameter", msg, name, NULL, NULL);
}

/* The form the Accept header asks for: JSON or SSE by name, else NDJSON. */
static enum gw_feed_form form_of(struct gw_req *r)
{
    const char *accept = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Accept");
    if (accept && strstr(accept, "text/event-stream"))
        return GW_FEED_SSE;
    if (accept && strstr(accept, "application/json") && !strstr(accept, "application/x-ndjson"))
        return GW_FEED_JSON;
    return GW_FEED_NDJSON;
}

/* after, or an SSE client's Last-Event-ID when after is absent. */
static int cursor_param(struct gw_req *r, uint64_t *after)
{
    const char *v;
    *after = 0;
    if (gw_param(r, "after", &v) != 0 ||
        (!v && gw_param_value(r, MHD_HEADER_KIND, "Last-Event-ID", &v) != 0))
        return -EINVAL;
    return v ? gw_parse_u64(v, 0, UINT64_MAX, after) : 0;
}

/* Reads the parameters into fr; answers a 400 and returns MHD_NO-or-YES via *answered. */
static enum MHD_Result parse_params(struct gw_req *r, struct gw_feed_req *fr, int *answered)
{
    uint64_t limit, wait_ms;
    *answered = 1;
    if (cursor_param(r, &fr->q.after) != 0)
        return bad_parameter(r, "after", "must be an integer 0..18446744073709551615");
    if (gw_param_u64(r, "limit", 1, FEED_LIMIT_MAX, FEED_LIMIT_DEFAULT, &limit) != 0)
        return bad_parameter(r, "limit", "must be an integer 1..100000");
    if (gw_param_u64(r, "wait_ms", 0, FEED_WAIT_MAX_MS, 0, &wait_ms) != 0)
        return bad_parameter(r, "wait_ms", "must be an integer 0..30000");
    *answered = 0;
    fr->q.limit = (size_t)limit;
    fr->q.form = form_of(r);
    fr->waiter.wake = wake;
    fr->waiter.deadline_ns = gw_now_ns() + wait_ms * 1000000u;
    return MHD_YES;
}

/* 1 when `id` is a shard of any epoch (the ledger holds every shard ever seen). */
static int shard_known(struct gw_server *s, const char *id, size_t len)
{
    size_t n = 0;
    int found = 0;
    struct gw_ledger_entry *all = gw_ledger_snapshot(gw_store_ledger(s->store), &n);
    for (size_t i = 0; all && i < n && !found; i++)
        found = all[i].id_len == len && memcmp(all[i].id, id, len) == 0;
    free(all);
    return found;
}

/* The first call: the watcher limit, then the parameters. */
/* Gives the request's --max-watchers place back and frees its state, at its completion. */
static void feed_req_free(struct gw_req *r)
{
    if (!r->feed)
        return;
    gw_feed_watch_leave(gw_store_watch(r->srv->store));
    free(r->feed);
    r->feed = NULL;
}

static enum MHD_Result begin(struct gw_req *r, const char *shard, size_t shard_len)
{
    if (gw_feed_watch_enter(gw_store_watch(r->srv->store)) != 0)
        return gw_serve_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "too_many_watchers",
                              "too many feed requests at once (--max-watchers)", "",
                              MHD_HTTP_HEADER_RETRY_AFTER, "1");
    struct gw_feed_req *fr = calloc(1, sizeof(*fr));
    if (!fr) {
        gw_feed_watch_leave(gw_store_watch(r->srv->store));
        return gw_serve_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory", "",
                              NULL, NULL);
    }
    fr->r = r;
    r->feed = fr;
    gw_req_on_end(r, feed_req_free);
    if (shard_len) {
        fr->waiter.shard_bit = gw_feed_shard_bit(shard, shard_len);
        fr->q.shard[0] = '"';
        memcpy(fr->q.shard + 1, shard, shard_len);
        fr->q.shard[shard_len + 1] = '"';
        fr->q.shard_len = shard_len + 2;
    }
    int answered;
    enum MHD_Result ret = parse_params(r, fr, &answered);
    if (answered)
        return ret;
    /* A cursor past the head would skip the receipts that come next (docs/api.md §17). */
    uint64_t head = gw_store_feed_head(r->srv->store);
    if (fr->q.after > head) {
        char msg[200];
        snprintf(msg, sizeof(msg),
                 "after: %llu is past the last durable receipt, seq %llu; a cursor is a "
                 "bookmark's last_seq",
                 (unsigned long long)fr->q.after, (unsigned long long)head);
        return gw_serve_error(r, MHD_HTTP_CONFLICT, "cursor_beyond_head", msg, "after", NULL, NULL);
    }
    gw_metrics_feed_lag(&r->srv->metrics, head, fr->q.after);
    return serve_page(r, fr);
}

enum MHD_Result gw_handle_receipts(struct gw_req *r, const char *rest)
{
    (void)rest;
    return r->feed ? serve_page(r, r->feed) : begin(r, NULL, 0);
}

/* GET /v1/shards/{id}/assignments: the only path under /v1/shards/. */
enum MHD_Result gw_handle_shard_path(struct gw_req *r, const char *rest)
{
    if (r->feed)
        return serve_page(r, r->feed);
    const char *slash = strchr(rest, '/');
    char msg[320];
    int moves = slash && strcmp(slash, "/moves") == 0;
    if (!slash || (strcmp(slash, "/assignments") != 0 && !moves)) {
        snprintf(msg, sizeof(msg), "no such endpoint: %.200s", r->path);
        return gw_serve_error(r, MHD_HTTP_NOT_FOUND, "not_found", msg, "", NULL, NULL);
    }
    size_t len = (size_t)(slash - rest);
    if (!gw_name_valid(rest, len, GW_SHARD_ID_MAX) || !shard_known(r->srv, rest, len)) {
        snprintf(msg, sizeof(msg), "no such shard: \"%.*s\"", (int)(len < 128 ? len : 128), rest);
        return gw_serve_error(r, MHD_HTTP_NOT_FOUND, "not_found", msg, "shard", NULL, NULL);
    }
    return moves ? gw_handle_shard_moves(r, rest, len) : begin(r, rest, len);
}
