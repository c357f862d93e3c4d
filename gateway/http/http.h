/* HTTP helpers that need no server: error bodies, media types, bearer tokens, addresses. */
#ifndef SHARDGATE_GW_HTTP_H
#define SHARDGATE_GW_HTTP_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "error.h"

/* Appends {"error":{"code":...,"message":...,"path":...}} and a newline. */
void gw_http_error_body(struct gw_buf *out, const char *code, const char *message,
                        const char *path);

/* 1 when a Content-Type value names application/json (any case, parameters such as
 * "; charset=utf-8" allowed), else 0. NULL is not JSON. */
int gw_http_is_json(const char *content_type);

/* Narrows [*s, *s + *len) to leave out leading and trailing spaces, tabs, CRs and LFs: the
 * one trim of a bearer token, in the Authorization header and in --token-file alike. */
void gw_http_trim(const char **s, size_t *len);

/* Finds the token of an "Authorization: Bearer <token>" value (trimmed by gw_http_trim). Returns 0
 * and the token (not NUL-terminated at *len), or -ENOENT when the value is missing or not a bearer.
 */
int gw_http_bearer(const char *authorization, const char **token, size_t *len);

/* Parses "HOST:PORT" (an IPv4 literal or "localhost", port 0..65535; 0 picks a free one).
 * Returns 0, or -EINVAL with a message in err. */
int gw_http_parse_listen(const char *text, struct sockaddr_in *out, struct gw_error *err);

#endif
