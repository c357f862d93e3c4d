/* The health service's /metrics and its page (docs/operations.md §1.4). */
#ifndef HC_METRICS_H
#define HC_METRICS_H

#include <stdint.h>
#include <time.h>

#include <microhttpd.h>

/* One verdict, as /healthz renders it. */
struct hc_verdict {
    char *body; /* the health+json document (malloc'ed; NULL when out of memory) */
    int pass;   /* 1: no issue, and judged */
    int judged; /* 0: the files, the journal or the store could not be read: cannot judge */
    uint64_t issues, checks, receipts, placements;
    time_t last_full; /* the last full verification's end; 0: none yet */
    unsigned reverify_s;
};

/* The Prometheus text (format 0.0.4) of a verdict, malloc'ed; NULL when out of memory. */
char *hc_metrics_text(const struct hc_verdict *v);

/* GET /ui (308 to /ui/) and /ui/<asset> (`rest` is what follows "/ui"): the page's files with
 * their Content-Security-Policy, or 404. */
enum MHD_Result hc_ui_reply(struct MHD_Connection *conn, const char *rest);

#endif
