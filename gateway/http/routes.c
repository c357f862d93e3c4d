/* The route table of `shardgate serve`: the one list of its endpoints (docs/api.md), who may
 * call each, and the 404 and 405 answers for everything else. */
#include "request.h"

#include <stdio.h>
#include <string.h>

static const struct gw_route routes[] = {
    {"POST", "/v1/batches", 0, GW_ACCESS_TOKEN, NULL, gw_handle_post_batches, "/v1/batches"},
    {"GET", "/v1/batches/", 1, GW_ACCESS_TOKEN, gw_handle_batch, NULL, "/v1/batches/{batch_id}"},
    {"GET", "/v1/ring", 0, GW_ACCESS_TOKEN, gw_handle_ring, NULL, "/v1/ring"},
    {"GET", "/v1/lookup", 0, GW_ACCESS_TOKEN, gw_handle_lookup, NULL, "/v1/lookup"},
    {"GET", "/v1/shards", 0, GW_ACCESS_TOKEN, gw_handle_shards, NULL, "/v1/shards"},
    {"GET", "/v1/epochs", 0, GW_ACCESS_TOKEN, gw_handle_epochs, NULL, "/v1/epochs"},
    {"GET", "/v1/moves", 0, GW_ACCESS_TOKEN, gw_handle_moves, NULL, "/v1/moves"},
    {"GET", "/v1/receipts", 0, GW_ACCESS_TOKEN, gw_handle_receipts, NULL, "/v1/receipts"},
    {"GET", "/v1/shards/", 1, GW_ACCESS_TOKEN, gw_handle_shard_path, NULL,
     "/v1/shards/{id}/assignments"},
    {"GET", "/v1/admin/membership", 0, GW_ACCESS_ADMIN, gw_handle_admin_membership_get, NULL,
     "/v1/admin/membership"},
    {"PUT", "/v1/admin/membership", 0, GW_ACCESS_ADMIN, NULL, gw_handle_admin_membership,
     "/v1/admin/membership"},
    {"GET", "/metrics", 0, GW_ACCESS_METRICS_OPEN, gw_handle_metrics, NULL, "/metrics"},
    {"GET", "/livez", 0, GW_ACCESS_OPEN, gw_handle_livez, NULL, "/livez"},
    {"GET", "/readyz", 0, GW_ACCESS_OPEN, gw_handle_readyz, NULL, "/readyz"},
    /* The status page (docs/api.md §19): its assets hold no data; the page reads the API with
     * the token the operator gives it. */
    {"GET", "/ui", 1, GW_ACCESS_OPEN, gw_handle_ui, NULL, "/ui/"},
    {"GET", "/ui", 0, GW_ACCESS_OPEN, gw_handle_ui, NULL, "/ui"},
};
#define ROUTE_COUNT (sizeof(routes) / sizeof(routes[0]))
_Static_assert(ROUTE_COUNT < GW_ROUTE_SLOTS, "a metrics slot per route, and one for no route");

/* The request is the route's from now on: its metrics slot, and whether it counts batches. */
static void take_route(struct gw_req *r, const struct gw_route *route)
{
    r->route = route;
    r->route_slot = route ? (unsigned)(route - routes) : GW_ROUTE_SLOTS - 1;
    r->counts_batch = route && route->stream == gw_handle_post_batches;
}

void gw_route_labels(struct gw_route_label labels[GW_ROUTE_SLOTS])
{
    for (size_t i = 0; i < GW_ROUTE_SLOTS; i++)
        labels[i] = (struct gw_route_label){NULL, NULL};
    for (size_t i = 0; i < ROUTE_COUNT; i++)
        labels[i] = (struct gw_route_label){routes[i].method, routes[i].label};
    labels[GW_ROUTE_SLOTS - 1] = (struct gw_route_label){"other", "other"};
}

/* The rest of `url` after the route's path, or NULL when the route is not for this path. */
static const char *path_rest(const struct gw_route *route, const char *url)
{
    size_t n = strlen(route->path);
    if (!route->prefix)
        return strcmp(url, route->path) == 0 ? url + n : NULL;
    return strncmp(url, route->path, n) == 0 && url[n] != '\0' ? url + n : NULL;
}

static int method_matches(const struct gw_route *route, const char *method)
{
    if (strcmp(method, route->method) == 0)
        return 1;
    return strcmp(route->method, "GET") == 0 && strcmp(method, "HEAD") == 0;
}

/* The route for method and url, or NULL; *same_path is a route for the path whatever its
 * method (NULL when no route has the path). */
static const struct gw_route *find_route(const char *url, const char *method, const char **rest,
                                         const struct gw_route **same_path)
{
    *same_path = NULL;
    for (size_t i = 0; i < ROUTE_COUNT; i++) {
        const char *tail = path_rest(&routes[i], url);
        if (!tail)
            continue;
        *same_path = &routes[i];
        if (method_matches(&routes[i], method)) {
            *rest = tail;
            return &routes[i];
        }
    }
    return NULL;
}

/* The methods of every route for `url`, as an Allow header (GET brings HEAD). */
static void allowed_methods(const char *url, char *out, size_t size)
{
    out[0] = '\0';
    for (size_t i = 0; i < ROUTE_COUNT; i++) {
        if (!path_rest(&routes[i], url))
            continue;
        int get = strcmp(routes[i].method, "GET") == 0;
        size_t n = strlen(out);
        snprintf(out + n, size - n, "%s%s", n ? ", " : "", get ? "GET, HEAD" : routes[i].method);
    }
}

/* 405 with the methods the path takes, or 404 when no route has the path. */
static enum MHD_Result no_route(struct gw_req *r, const char *url, const char *method,
                                const struct gw_route *same_path)
{
    char msg[320], allow[64];
    if (!same_path) {
        snprintf(msg, sizeof(msg), "no such endpoint: %.200s", url);
        return gw_serve_error(r, MHD_HTTP_NOT_FOUND, "not_found", msg, "", NULL, NULL);
    }
    allowed_methods(url, allow, sizeof(allow));
    snprintf(msg, sizeof(msg), "%s is not allowed on %.200s", method, url);
    return gw_serve_error(r, MHD_HTTP_METHOD_NOT_ALLOWED, "method_not_allowed", msg, "",
                          MHD_HTTP_HEADER_ALLOW, allow);
}

/* Answers a complete request that no stream route took, so that its (ignored) body has been
 * read and the connection stays open for the next request. */
static enum MHD_Result answer(struct gw_req *r, const char *url, const char *method)
{
    const char *rest = "";
    const struct gw_route *same_path;
    const struct gw_route *route = find_route(url, method, &rest, &same_path);
    if (!route)
        return no_route(r, url, method, same_path);
    take_route(r, route);
    if (!gw_serve_route_authorized(r, route))
        return gw_serve_unauthorized(r);
    return route->answer(r, rest);
}

/* The stream route for this request, if it has one: known from the first handler call. */
static const struct gw_route *stream_route(const char *url, const char *method)
{
    const char *rest;
    const struct gw_route *same_path;
    const struct gw_route *route = find_route(url, method, &rest, &same_path);
    return route && route->stream ? route : NULL;
}

/* What gw_serve_path_seen returns for a path that must not be decoded: a mark, not a request. */
static char bad_path_mark;
void *const gw_bad_path = &bad_path_mark;

static int hex_value(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

void *gw_serve_path_seen(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls, (void)conn;
    const char *end = uri + strcspn(uri, "?");
    for (const char *p = uri; p + 2 < end; p++) {
        int hi = *p == '%' ? hex_value(p[1]) : -1, lo = hi >= 0 ? hex_value(p[2]) : -1;
        if (lo >= 0 && (hi < 2 || (hi == 7 && lo == 15)))
            return gw_bad_path;
    }
    return NULL;
}

/* 400 for a path holding an encoded NUL or control byte (docs/api.md §1). */
static enum MHD_Result bad_path(struct gw_req *r)
{
    return gw_serve_error(r, MHD_HTTP_BAD_REQUEST, "invalid_path",
                          "the path holds a percent-encoded NUL or control byte (%00-%1F, %7F): "
                          "no endpoint, batch_id or shard id has one",
                          "", NULL, NULL);
}

enum MHD_Result gw_serve_access(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version, const char *data,
                                size_t *size, void **con_cls)
{
    (void)version;
    struct gw_req *r = *con_cls;
    if (!r || r == gw_bad_path) /* a head complete: no deadline until its request ends */
        gw_heads_request_began(&((struct gw_server *)cls)->heads, conn);
    if (r == gw_bad_path) {
        r = gw_req_new(cls, conn, url, method);
        *con_cls = r;
        return r ? bad_path(r) : MHD_NO;
    }
    if (!r) {
        r = gw_req_new(cls, conn, url, method);
        if (!r)
            return MHD_NO;
        *con_cls = r;
        const char *why;
        unsigned refused = gw_framing_fault(conn, &why);
        if (refused) /* before any byte of its body: the connection is closed after it */
            return gw_serve_error(r, refused,
                                  refused == MHD_HTTP_NOT_IMPLEMENTED ? "not_implemented"
                                                                      : "invalid_framing",
                                  why, "", MHD_HTTP_HEADER_CONNECTION, "close");
        take_route(r, stream_route(url, method));
        if (!r->route)
            return MHD_YES; /* answered once the request is complete */
        if (!gw_serve_route_authorized(r, r->route))
            return gw_serve_unauthorized(r);
    }
    if (r->route && r->route->stream)
        return r->route->stream(r, data, size);
    if (*size > 0) {
        size_t n = *size;
        *size = 0; /* a body where none is expected is read and ignored, within limits */
        return gw_body_ignore(r, n);
    }
    return r->phase == GW_PHASE_ANSWERED ? MHD_YES : answer(r, url, method);
}
