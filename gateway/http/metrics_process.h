/* The process's own series under the names every Prometheus client library gives them
 * (process_*), and shardgate_build_info (docs/api.md §8). Internal to http/. */
#ifndef SHARDGATE_GW_METRICS_PROCESS_H
#define SHARDGATE_GW_METRICS_PROCESS_H

#include <stdint.h>

#include "buf.h"

/* Appends build info and process_* series; `start_s` is when the process started (Unix
 * seconds). Figures that cannot be read (no /proc) are left out, never written as 0. */
void gw_metrics_process(struct gw_buf *out, double start_s);

#endif
