/* Error bodies (docs/api.md §1): the gateway's own form, or RFC 9457 problem details for a
 * client whose Accept names application/problem+json. */
#include "request.h"

#include <string.h>
#include <strings.h>

#include "http.h"

#define PROBLEM_TYPE "application/problem+json"

/* 1 when the media range [p, p + len) has q=0 (RFC 9110, section 12.4.2: "not acceptable"). */
static int q_is_zero(const char *p, size_t len)
{
    for (const char *end = p + len; p < end; p++) {
        if (*p != ';')
            continue;
        p++;
        while (p < end && (*p == ' ' || *p == '\t'))
            p++;
        if (end - p < 2 || strncasecmp(p, "q=", 2) != 0)
            continue;
        size_t v = strcspn(p + 2, ";, \t");
        const char *value = p + 2;
        if (v > (size_t)(end - value))
            v = (size_t)(end - value);
        return value[0] == '0' && (v == 1 || (value[1] == '.' && strspn(value + 2, "0") == v - 2));
    }
    return 0;
}

/* 1 when one media range of `accept` is application/problem+json with a q other than 0. */
static int accepts_problem(const char *accept)
{
    size_t n = strlen(PROBLEM_TYPE);
    for (const char *p = accept; p && *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len >= n && strncasecmp(p, PROBLEM_TYPE, n) == 0 &&
            (len == n || p[n] == ';' || p[n] == ' ' || p[n] == '\t') && !q_is_zero(p, len))
            return 1;
        p = end;
    }
    return 0;
}

/* The problem's title: its code in words ("batch_id_reused": "Batch id reused"). */
static void title_of(struct gw_buf *out, const char *code)
{
    char title[64];
    size_t n = 0;
    for (; code[n] && n + 1 < sizeof(title); n++)
        title[n] = code[n] == '_' ? ' ' : code[n];
    title[n] = '\0';
    if (title[0] >= 'a' && title[0] <= 'z')
        title[0] = (char)(title[0] - 'a' + 'A');
    gw_buf_json_string(out, title, n);
}

const char *gw_serve_error_body(struct gw_req *r, struct gw_buf *out, unsigned status,
                                const char *code, const char *message, const char *path)
{
    if (!accepts_problem(
            MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT))) {
        gw_http_error_body(out, code, message, path);
        return "application/json";
    }
    gw_buf_puts(out, "{\"type\":\"tag:shardgate,2026:");
    gw_buf_puts(out, code);
    gw_buf_puts(out, "\",\"title\":");
    title_of(out, code);
    gw_buf_field_u64(out, ",\"status\":", status);
    gw_buf_puts(out, ",\"detail\":");
    gw_buf_json_string(out, message, strlen(message));
    gw_buf_puts(out, ",\"instance\":");
    gw_buf_json_string(out, r->path, strlen(r->path));
    gw_buf_puts(out, ",\"code\":");
    gw_buf_json_string(out, code, strlen(code));
    gw_buf_puts(out, ",\"path\":");
    gw_buf_json_string(out, path, strlen(path));
    gw_buf_puts(out, "}\n");
    return PROBLEM_TYPE;
}
