/* The health service's /metrics and its page (docs/operations.md §1.4). */
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Generated from ui/ (ui/embed.cmake): the asset at /ui/URL. Returns 0, or -1. */
int hc_ui_asset(const char *url, const char **type, const unsigned char **data, size_t *len);

#define HC_UI_CSP "default-src 'self'; form-action 'none'; frame-ancestors 'none'"

char *hc_metrics_text(const struct hc_verdict *v)
{
    static const char fmt[] =
        "# HELP shardgate_health_pass 1 when the verdict is pass; 0 on any issue and when it "
        "cannot judge.\n"
        "# TYPE shardgate_health_pass gauge\n"
        "shardgate_health_pass %d\n"
        "# HELP shardgate_health_judged 0 when the files, the journal or the store could not be "
        "read: the verdict is then fail, never pass.\n"
        "# TYPE shardgate_health_judged gauge\n"
        "shardgate_health_judged %d\n"
        "# HELP shardgate_health_issues Issues in the verdict.\n"
        "# TYPE shardgate_health_issues gauge\n"
        "shardgate_health_issues %llu\n"
        "# HELP shardgate_health_checks Checks (criterion evaluations) in the verdict.\n"
        "# TYPE shardgate_health_checks gauge\n"
        "shardgate_health_checks %llu\n"
        "# HELP shardgate_health_receipts_verified Receipts verified.\n"
        "# TYPE shardgate_health_receipts_verified gauge\n"
        "shardgate_health_receipts_verified %llu\n"
        "# HELP shardgate_health_placements_verified Placements verified.\n"
        "# TYPE shardgate_health_placements_verified gauge\n"
        "shardgate_health_placements_verified %llu\n"
        "# HELP shardgate_health_last_full_verification_timestamp_seconds Unix time the last "
        "full re-verification ended; 0 before the first.\n"
        "# TYPE shardgate_health_last_full_verification_timestamp_seconds gauge\n"
        "shardgate_health_last_full_verification_timestamp_seconds %lld\n"
        "# HELP shardgate_health_reverify_interval_seconds --reverify-interval.\n"
        "# TYPE shardgate_health_reverify_interval_seconds gauge\n"
        "shardgate_health_reverify_interval_seconds %u\n";
    int n = snprintf(NULL, 0, fmt, v->pass, v->judged, (unsigned long long)v->issues,
                     (unsigned long long)v->checks, (unsigned long long)v->receipts,
                     (unsigned long long)v->placements, (long long)v->last_full, v->reverify_s);
    char *text = n < 0 ? NULL : malloc((size_t)n + 1);
    if (text != NULL)
        snprintf(text, (size_t)n + 1, fmt, v->pass, v->judged, (unsigned long long)v->issues,
                 (unsigned long long)v->checks, (unsigned long long)v->receipts,
                 (unsigned long long)v->placements, (long long)v->last_full, v->reverify_s);
    return text;
}

static enum MHD_Result queue(struct MHD_Connection *conn, unsigned status, struct MHD_Response *r,
                             const char *type)
{
    if (r == NULL)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Content-Security-Policy", HC_UI_CSP);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

enum MHD_Result hc_ui_reply(struct MHD_Connection *conn, const char *rest)
{
    static const char moved[] = "/ui/\n";
    static const char missing[] =
        "{\"error\":{\"code\":\"not_found\",\"message\":\"no such page under /ui/\"}}\n";
    const char *type;
    const unsigned char *data;
    size_t len;
    if (rest[0] == '\0') {
        struct MHD_Response *r = MHD_create_response_from_buffer(sizeof moved - 1, (void *)moved,
                                                                 MHD_RESPMEM_PERSISTENT);
        if (r != NULL)
            MHD_add_response_header(r, "Location", "/ui/");
        return queue(conn, MHD_HTTP_PERMANENT_REDIRECT, r, "text/plain; charset=utf-8");
    }
    if (rest[0] == '/' && hc_ui_asset(rest[1] ? rest + 1 : "index.html", &type, &data, &len) == 0)
        return queue(conn, MHD_HTTP_OK,
                     MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_PERSISTENT),
                     type);
    return queue(conn, MHD_HTTP_NOT_FOUND,
                 MHD_create_response_from_buffer(sizeof missing - 1, (void *)missing,
                                                 MHD_RESPMEM_PERSISTENT),
                 "application/json");
}
