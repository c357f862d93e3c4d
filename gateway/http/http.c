/* HTTP helpers that need no server: error bodies, media types, bearer tokens, addresses. */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
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

/* Splits "HOST:PORT" or "[HOST]:PORT"; host without the brackets. */
static int split_listen(const char *text, char host[64], uint64_t *port)
{
    const char *colon = strrchr(text, ':'), *start = text, *end = colon;
    if (text[0] == '[') {
        end = strchr(text, ']');
        if (!end || end[1] != ':')
            return -EINVAL;
        start = text + 1;
        colon = end + 1;
    }
    size_t n = end && end > start ? (size_t)(end - start) : 0;
    if (n == 0 || n >= 64 || gw_parse_u64(colon + 1, 0, 65535, port))
        return -EINVAL;
    memcpy(host, start, n);
    host[n] = '\0';
    return 0;
}

int gw_http_parse_listen(const char *text, struct sockaddr_storage *out, struct gw_error *err)
{
    char host[64];
    uint64_t port;
    if (split_listen(text, host, &port) != 0) {
        gw_error_set(err, "", "--listen: \"%s\" is not HOST:PORT or [HOST]:PORT (port 0..65535)",
                     text);
        return -EINVAL;
    }
    memset(out, 0, sizeof(*out));
    struct sockaddr_in *v4 = (struct sockaddr_in *)out;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;
    if (text[0] == '[') {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1)
            return 0;
        gw_error_set(err, "", "--listen: \"%s\" is not an IPv6 address", host);
        return -EINVAL;
    }
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)port);
    if (strcmp(host, "localhost") == 0)
        strcpy(host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1)
        return 0;
    gw_error_set(err, "", "--listen: \"%s\" is not an IPv4 address", host);
    return -EINVAL;
}

void gw_http_format_address(const struct sockaddr_storage *addr, char *out)
{
    char host[INET6_ADDRSTRLEN] = "?";
    if (addr->ss_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)addr;
        inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof(host));
        snprintf(out, GW_HTTP_ADDRESS_MAX, "[%s]:%u", host, (unsigned)ntohs(v6->sin6_port));
        return;
    }
    const struct sockaddr_in *v4 = (const struct sockaddr_in *)addr;
    inet_ntop(AF_INET, &v4->sin_addr, host, sizeof(host));
    snprintf(out, GW_HTTP_ADDRESS_MAX, "%s:%u", host, (unsigned)ntohs(v4->sin_port));
}
