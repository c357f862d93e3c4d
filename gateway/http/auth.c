/* The bearer token of `shardgate serve --token-file` (docs/api.md §11): which
 * requests need it and how it is compared. */
#include "request.h"

#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "http.h"

int gw_serve_bearer_is(struct gw_req *r, const unsigned char want[32])
{
    const char *token;
    size_t len;
    unsigned char digest[32];
    const char *value =
        MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (gw_http_bearer(value, &token, &len) != 0)
        return 0;
    /* Comparing digests keeps the compare constant-time whatever the token lengths. */
    if (!EVP_Digest(token, len, digest, NULL, EVP_sha256(), NULL))
        return 0;
    return CRYPTO_memcmp(digest, want, sizeof(digest)) == 0;
}

int gw_serve_authorized(struct gw_req *r)
{
    return !r->srv->auth || gw_serve_bearer_is(r, r->srv->token_digest);
}

/* Endpoints anyone may read while a token is configured: the probes, and /metrics with
 * --metrics-open (the route table says which). Every other one shows or writes receipts,
 * shards or the ring. */
static int open_route(const struct gw_server *s, const struct gw_route *route)
{
    if (route->access == GW_ACCESS_OPEN)
        return 1;
    return route->access == GW_ACCESS_METRICS_OPEN && s->opt.metrics_open;
}

int gw_serve_route_authorized(struct gw_req *r, const struct gw_route *route)
{
    if (route->access == GW_ACCESS_ADMIN)
        return 1; /* the admin handler answers 403 or 401 itself (docs/api.md §15) */
    return open_route(r->srv, route) || gw_serve_authorized(r);
}

enum MHD_Result gw_serve_unauthorized(struct gw_req *r)
{
    char msg[320];
    snprintf(msg, sizeof(msg), "%s needs Authorization: Bearer <token>",
             strcmp(r->method, MHD_HTTP_METHOD_POST) == 0 ? "POST" : r->path);
    return gw_serve_error(r, MHD_HTTP_UNAUTHORIZED, "unauthorized", msg, "",
                          MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
}
