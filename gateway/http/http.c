/* HTTP helpers that need no server: error bodies, media types, bearer tokens, addresses. */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "number.h"

void gw_http_error_body(struct gw_buf *out, const char *code, const char *message, const char *path)
{
    gw_buf_puts(out, "{\"error\":{\"code\":");
    gw_buf_json_string(out, code, strlen(code));
    gw_buf_puts(out, ",\"message\":");
    gw_buf_json_string(out, message, strlen(message));
    gw_buf_puts(out, ",\"path\":");
    gw_buf_json_string(out, path, strlen(path));
    gw_buf_puts(out, "}}\n");
}

static int is_space(char c)
{
    return c == ' ' || c == '\t';
}

int gw_http_is_json(const char *content_type)
{
    static const char json[] = "application/json";
    if (!content_type)
        return 0;
    while (is_space(*content_type))
        content_type++;
    if (strncasecmp(content_type, json, sizeof(json) - 1) != 0)
        return 0;
    const char *rest = content_type + sizeof(json) - 1;
    while (is_space(*rest))
        rest++;
    return *rest == '\0' || *rest == ';';
}

static int is_token_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

void gw_http_trim(const char **s, size_t *len)
{
    while (*len > 0 && is_token_space(**s)) {
        (*s)++;
        (*len)--;
    }
    while (*len > 0 && is_token_space((*s)[*len - 1]))
        (*len)--;
}

int gw_http_bearer(const char *authorization, const char **token, size_t *len)
{
    if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
        return -ENOENT;
    *token = authorization + 7;
    *len = strlen(*token);
    gw_http_trim(token, len);
    return *len == 0 ? -ENOENT : 0;
}

int gw_http_parse_listen(const char *text, struct sockaddr_in *out, struct gw_error *err)
{
    const char *colon = strrchr(text, ':');
    char host[64];
    uint64_t port;
    size_t n = colon ? (size_t)(colon - text) : 0;
    if (!colon || n == 0 || n >= sizeof(host) || gw_parse_u64(colon + 1, 0, 65535, &port)) {
        gw_error_set(err, "", "--listen: \"%s\" is not HOST:PORT (port 0..65535)", text);
        return -EINVAL;
    }
    memcpy(host, text, n);
    host[n] = '\0';
    memset(out, 0, sizeof(*out));
    out->sin_family = AF_INET;
    out->sin_port = htons((uint16_t)port);
    if (strcmp(host, "localhost") == 0)
        strcpy(host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &out->sin_addr) != 1) {
        gw_error_set(err, "", "--listen: \"%s\" is not an IPv4 address", host);
        return -EINVAL;
    }
    return 0;
}
