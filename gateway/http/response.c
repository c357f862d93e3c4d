/* Answers: every response of `shardgate serve` is queued here, and counted in the metrics
 * once. It calls no handler and no route: the route's metrics slot is the request's. */
#include "request.h"

#include "feed_stream.h"
#include "http.h"
#include "timing.h"

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
    gw_request_metrics_count(&s->requests, r->route_slot, r->status, gw_now_ns() - r->start_ns);
    if (r->counts_batch) /* the batch metrics (docs/api.md §8) */
        gw_metrics_batch(&s->metrics, result_of(r), r->changes, r->over_capacity);
}

/* Queues a response made by one of the two below, with its headers, and counts it. */
static enum MHD_Result queue(struct gw_req *r, unsigned status, struct MHD_Response *resp,
                             const char *content_type, const char *header, const char *value)
{
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    MHD_add_response_header(resp, "X-Content-Type-Options",
                            "nosniff"); /* JSON, SVG: never a page */
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
    return queue(r, status, resp, content_type, header, value);
}

enum MHD_Result gw_serve_static(struct gw_req *r, const char *content_type, const void *data,
                                size_t len)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_PERSISTENT);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Security-Policy", r->srv->ui.csp);
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    return queue(r, MHD_HTTP_OK, resp, content_type, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
}

enum MHD_Result gw_serve_respond_page(struct gw_req *r, const char *content_type,
                                      struct gw_feed_body *page, const char *header,
                                      const char *value)
{
    struct MHD_Response *resp;
    if (gw_feed_long_held(&page->whole)) {
        resp = gw_feed_stream_response(r->srv, page);
    } else {
        resp = MHD_create_response_from_buffer_with_free_callback_cls(page->len, page->data,
                                                                      gw_feed_body_unref, page);
        if (!resp)
            gw_feed_body_unref(page);
    }
    if (!resp)
        return MHD_NO;
    return queue(r, MHD_HTTP_OK, resp, content_type, header, value);
}

enum MHD_Result gw_serve_error(struct gw_req *r, unsigned status, const char *code,
                               const char *message, const char *path, const char *header,
                               const char *value)
{
    struct gw_buf body;
    gw_buf_init(&body);
    const char *type = gw_serve_error_body(r, &body, status, code, message, path);
    return gw_serve_respond(r, status, type, &body, header, value);
}

enum MHD_Result gw_serve_json(struct gw_req *r, unsigned status, struct gw_buf *body)
{
    return gw_serve_respond(r, status, "application/json", body, NULL, NULL);
}
