/* `shardgate admin`'s requests to a running server (docs/tools.md §1.2), on libcurl. */
#ifndef SHARDGATE_GW_ADMIN_HTTP_H
#define SHARDGATE_GW_ADMIN_HTTP_H

#include <stddef.h>

#include "buf.h"

struct gw_admin_client {
    const char *url;    /* the server's base URL, without a trailing slash */
    char *token;        /* the client token, or NULL */
    char *admin_token;  /* the admin token, or NULL */
    void *curl;         /* one handle: its connection is kept alive between requests */
    const char *accept; /* the Accept header's type; NULL: application/json */
    long timeout_s;     /* a request's whole time; 0: 30 s */
};

/* What the server answered. */
struct gw_admin_answer {
    long status;
    struct gw_buf body;
    char etag[128]; /* the ETag header's value, "" when none */
};

/* A request, its answer whatever its status. `token` (may be NULL) goes as a bearer token,
 * `if_match` (may be NULL) as If-Match, `body` (may be NULL) as a JSON body. Returns 0, or -1
 * when no answer came (msg: why, "cannot reach URL: what"). */
int gw_admin_request(struct gw_admin_client *c, const char *method, const char *path,
                     const char *token, const char *if_match, const struct gw_buf *body,
                     struct gw_admin_answer *a, char *msg, size_t cap);

void gw_admin_answer_free(struct gw_admin_answer *a);

/* Opens the client (libcurl's handle); -1 on no memory. */
int gw_admin_client_open(struct gw_admin_client *c);
void gw_admin_client_close(struct gw_admin_client *c);

#endif
