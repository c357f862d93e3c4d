/* The request histograms by route and status class, and their rendering. */
#include "request_metrics.h"

#include <stdio.h>

void gw_request_metrics_init(struct gw_request_metrics *m)
{
    for (size_t i = 0; i < GW_ROUTE_SLOTS; i++)
        for (size_t k = 0; k < GW_STATUS_CLASSES; k++)
            gw_histogram_init(&m->by[i][k]);
}

void gw_request_metrics_count(struct gw_request_metrics *m, unsigned slot, unsigned status,
                              uint64_t ns)
{
    unsigned k = status >= 100 && status < 600 ? status / 100 - 1 : GW_STATUS_CLASSES - 1;
    gw_metrics_observe(&m->by[slot < GW_ROUTE_SLOTS ? slot : GW_ROUTE_SLOTS - 1][k], ns);
}

void gw_request_metrics_render(struct gw_buf *out, struct gw_request_metrics *m)
{
    const char *name = "shardgate_http_request_duration_seconds";
    gw_metrics_header(
        out, name, "histogram",
        "Time from the request headers to the answer being queued, by route and status class.");
    for (unsigned i = 0; i < GW_ROUTE_SLOTS; i++)
        for (unsigned k = 0; k < GW_STATUS_CLASSES; k++) {
            if (!m->labels[i].route || atomic_load(&m->by[i][k].count) == 0)
                continue;
            char labels[160];
            snprintf(labels, sizeof(labels), "method=\"%s\",route=\"%s\",code=\"%uxx\"",
                     m->labels[i].method, m->labels[i].route, k + 1);
            gw_histogram_samples(out, name, labels, &m->by[i][k]);
        }
}
