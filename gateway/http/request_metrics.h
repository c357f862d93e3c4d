/* The HTTP request histograms (docs/api.md §8): one per route of the route table (routes.c) and
 * one for requests no route took, each by status class 1xx to 5xx. */
#ifndef SHARDGATE_GW_REQUEST_METRICS_H
#define SHARDGATE_GW_REQUEST_METRICS_H

#include <stdint.h>

#include "buf.h"
#include "metrics.h"

#define GW_ROUTE_SLOTS 20
#define GW_STATUS_CLASSES 5

/* A route slot's labels; `route` NULL: the slot is not used. */
struct gw_route_label {
    const char *method, *route;
};

struct gw_request_metrics {
    struct gw_histogram by[GW_ROUTE_SLOTS][GW_STATUS_CLASSES]; /* seconds */
    struct gw_route_label labels[GW_ROUTE_SLOTS];              /* the routes' (gw_route_labels) */
};

/* Every histogram at zero; the labels are the route table's (gw_route_labels). */
void gw_request_metrics_init(struct gw_request_metrics *m);

/* Counts one answered request of route slot `slot` with `status`, `ns` after its headers. */
void gw_request_metrics_count(struct gw_request_metrics *m, unsigned slot, unsigned status,
                              uint64_t ns);

/* Appends shardgate_http_request_duration_seconds: every route and status class that has
 * answered a request. */
void gw_request_metrics_render(struct gw_buf *out, struct gw_request_metrics *m);

#endif
