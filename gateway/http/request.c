/* One request's lifetime: created at its first handler call, logged and freed at MHD's
 * completion notice (docs/api.md §12). */
#include "request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"

struct gw_req *gw_req_new(struct gw_server *s, struct MHD_Connection *conn, const char *url,
                          const char *method)
{
    struct gw_req *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->srv = s;
    r->conn = conn;
    r->view = gw_view_acquire(&s->views); /* the whole request uses this one view */
    r->start_ns = gw_now_ns();
    snprintf(r->method, sizeof(r->method), "%s", method);
    snprintf(r->path, sizeof(r->path), "%s", url);
    r->route_slot = GW_ROUTE_SLOTS - 1;
    gw_buf_init(&r->body);
    atomic_fetch_add(&s->active, 1);
    return r;
}

void gw_req_on_end(struct gw_req *r, gw_req_end_fn fn)
{
    for (size_t i = 0; i < r->n_on_end; i++)
        if (r->on_end[i] == fn)
            return;
    if (r->n_on_end == GW_REQ_ON_END_MAX)
        abort(); /* more parts than GW_REQ_ON_END_MAX: a leak otherwise */
    r->on_end[r->n_on_end++] = fn;
}

/* "2024-05-01T12:00:00.123Z" */
static void format_time(char *out, size_t n)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t k = strftime(out, n, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + k, n - k, ".%03ldZ", ts.tv_nsec / 1000000L);
}

static void log_request(const struct gw_req *r, uint64_t ns)
{
    struct gw_buf line;
    char when[40];
    gw_buf_init(&line);
    format_time(when, sizeof(when));
    gw_buf_puts(&line, "{\"time\":\"");
    gw_buf_puts(&line, when);
    gw_buf_puts(&line, "\",\"method\":");
    gw_buf_json_string(&line, r->method, strlen(r->method));
    gw_buf_puts(&line, ",\"path\":");
    gw_buf_json_string(&line, r->path, strlen(r->path));
    gw_buf_field_u64(&line, ",\"status\":", r->status);
    gw_buf_puts(&line, ",\"batch_id\":");
    if (r->batch_id[0])
        gw_buf_json_string(&line, r->batch_id, strlen(r->batch_id));
    else
        gw_buf_puts(&line, "null");
    gw_buf_field_u64(&line, ",\"changes\":", r->changes);
    char ms[32];
    snprintf(ms, sizeof(ms), ",\"duration_ms\":%.3f}\n", (double)ns / 1e6);
    gw_buf_puts(&line, ms);
    if (!line.failed && write(STDERR_FILENO, line.data, line.len) < 0)
        line.failed = 1; /* nowhere left to say so */
    gw_buf_free(&line);
}

void gw_serve_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                        enum MHD_RequestTerminationCode toe)
{
    struct gw_server *s = cls;
    struct gw_req *r = *con_cls;
    gw_heads_request_ended(&s->heads, conn); /* the next head's clock starts */
    if (!r || r == gw_bad_path)
        return;
    uint64_t now = gw_now_ns();
    /* The timeout that ended a body is its deadline when that is what the connection's timeout
     * was set to: libmicrohttpd measures it from its own last-activity time, which can be a
     * moment before the deadline was taken, so `now` alone may fall just short of it. */
    if (r->phase == GW_PHASE_BODY && r->status == 0 &&
        toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED)
        r->status = r->deadline_ns && (r->deadline_armed || now >= r->deadline_ns)
                        ? MHD_HTTP_REQUEST_TIMEOUT
                        : 0;
    log_request(r, now - r->start_ns);
    for (size_t i = 0; i < r->n_on_end; i++)
        r->on_end[i](r);
    gw_view_unref(r->view); /* an old view is freed by its last request */
    free(r);
    *con_cls = NULL;
    atomic_fetch_sub(&s->active, 1);
}
