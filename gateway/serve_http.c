/* The HTTP plumbing of `shardgate serve`: routing, responses, and the per-request log line. */
#include "serve.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "http.h"

uint64_t gw_serve_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int gw_serve_ready(struct gw_server *s)
{
    return atomic_load(&s->replayed) && !gw_committer_failed(&s->committer) &&
           ring_points_total(s->topo.ring) > 0;
}

static enum gw_batch_result result_of(const struct gw_req *r)
{
    if (r->status == MHD_HTTP_OK)
        return r->result == GW_RESULT_REPLAYED ? GW_RESULT_REPLAYED : GW_RESULT_ACCEPTED;
    if (r->status == MHD_HTTP_CONFLICT)
        return GW_RESULT_IN_FLIGHT;
    if (r->status == MHD_HTTP_SERVICE_UNAVAILABLE)
        return GW_RESULT_UNAVAILABLE;
    if (r->status >= 500 || r->status == 0)
        return GW_RESULT_ERROR;
    return GW_RESULT_REJECTED;
}

/* Counted when the answer is queued, so a client that has its answer sees it in /metrics. */
void gw_serve_count(struct gw_req *r)
{
    struct gw_server *s = r->srv;
    gw_metrics_observe(&s->metrics.request, gw_serve_now_ns() - r->start_ns);
    if (r->route == GW_ROUTE_POST_BATCHES)
        gw_metrics_batch(&s->metrics, result_of(r), r->changes);
}

enum MHD_Result gw_serve_respond(struct gw_req *r, unsigned status, const char *content_type,
                                 struct gw_buf *body, const char *header, const char *value)
{
    if (body->failed) {
        gw_buf_free(body);
        gw_buf_puts(body, "{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\","
                          "\"path\":\"\"}}\n");
        status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        content_type = "application/json";
        header = NULL;
    }
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(body->len, body->data, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        gw_buf_free(body);
        return MHD_NO;
    }
    body->data = NULL; /* the response owns it now */
    gw_buf_free(body);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    if (header)
        MHD_add_response_header(resp, header, value);
    if (atomic_load(&r->srv->draining))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    r->status = status;
    r->phase = GW_PHASE_ANSWERED;
    gw_serve_count(r);
    enum MHD_Result ret = MHD_queue_response(r->conn, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

enum MHD_Result gw_serve_error(struct gw_req *r, unsigned status, const char *code,
                               const char *message, const char *path, const char *header,
                               const char *value)
{
    struct gw_buf body;
    gw_buf_init(&body);
    gw_http_error_body(&body, code, message, path);
    return gw_serve_respond(r, status, "application/json", &body, header, value);
}

static struct gw_req *req_new(struct gw_server *s, struct MHD_Connection *conn, const char *url,
                              const char *method)
{
    struct gw_req *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->srv = s;
    r->conn = conn;
    r->start_ns = gw_serve_now_ns();
    snprintf(r->method, sizeof(r->method), "%s", method);
    snprintf(r->path, sizeof(r->path), "%s", url);
    gw_buf_init(&r->body);
    gw_buf_init(&r->receipt);
    atomic_init(&r->committed, 0);
    atomic_fetch_add(&s->active, 1);
    return r;
}

static int is_get(const char *method)
{
    return strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
}

static int is_get_path(const char *url)
{
    static const char *const paths[] = {"/v1/ring", "/v1/lookup", "/v1/shards",
                                        "/metrics", "/livez",     "/readyz"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
        if (strcmp(url, paths[i]) == 0)
            return 1;
    return strncmp(url, "/v1/batches/", 12) == 0 && url[12] != '\0';
}

/* Answers every request but POST /v1/batches, once its (ignored) body has been read, so that
 * the connection stays open for the next request. */
static enum MHD_Result route(struct gw_req *r, const char *url, const char *method)
{
    char msg[320];
    if (strcmp(url, "/v1/batches") == 0) {
        snprintf(msg, sizeof(msg), "%s is not allowed on /v1/batches", method);
        return gw_serve_error(r, MHD_HTTP_METHOD_NOT_ALLOWED, "method_not_allowed", msg, "",
                              MHD_HTTP_HEADER_ALLOW, "POST");
    }
    if (is_get_path(url)) {
        if (is_get(method))
            return gw_serve_get(r, url);
        snprintf(msg, sizeof(msg), "%s is not allowed on %.200s", method, url);
        return gw_serve_error(r, MHD_HTTP_METHOD_NOT_ALLOWED, "method_not_allowed", msg, "",
                              MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    }
    snprintf(msg, sizeof(msg), "no such endpoint: %.200s", url);
    return gw_serve_error(r, MHD_HTTP_NOT_FOUND, "not_found", msg, "", NULL, NULL);
}

enum MHD_Result gw_serve_access(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version, const char *data,
                                size_t *size, void **con_cls)
{
    (void)version;
    struct gw_req *r = *con_cls;
    if (!r) {
        r = req_new(cls, conn, url, method);
        if (!r)
            return MHD_NO;
        *con_cls = r;
        int post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
        if (!post || strcmp(url, "/v1/batches") != 0)
            return MHD_YES; /* answered once the request is complete */
        r->route = GW_ROUTE_POST_BATCHES;
    }
    if (r->route == GW_ROUTE_POST_BATCHES)
        return gw_serve_post_batches(r, data, size);
    if (*size > 0) {
        size_t n = *size;
        *size = 0; /* a body where none is expected is read and ignored, within limits */
        return gw_body_ignore(r, n);
    }
    return r->phase == GW_PHASE_ANSWERED ? MHD_YES : route(r, url, method);
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
    (void)conn;
    struct gw_server *s = cls;
    struct gw_req *r = *con_cls;
    if (!r)
        return;
    uint64_t now = gw_serve_now_ns();
    if (r->phase == GW_PHASE_BODY && r->status == 0 &&
        toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED)
        r->status = r->deadline_ns && now >= r->deadline_ns ? MHD_HTTP_REQUEST_TIMEOUT : 0;
    log_request(r, now - r->start_ns);
    gw_body_release(r);
    gw_buf_free(&r->receipt);
    free(r->tally);
    free(r);
    *con_cls = NULL;
    atomic_fetch_sub(&s->active, 1);
}
