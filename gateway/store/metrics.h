/* Process metrics and their Prometheus text rendering (format 0.0.4). Lock-free counters. */
#ifndef SHARDGATE_GW_METRICS_H
#define SHARDGATE_GW_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "dispatch.h"
#include "ledger.h"
#include "shard_counts.h"
#include "topology.h"

/* How a POST /v1/batches ended; the `result` label of shardgate_batches_total. */
enum gw_batch_result {
    GW_RESULT_ACCEPTED,    /* 200, newly journaled */
    GW_RESULT_REPLAYED,    /* 200, stored receipt */
    GW_RESULT_REJECTED,    /* 4xx other than 409: invalid, unauthorized, reused, over capacity */
    GW_RESULT_IN_FLIGHT,   /* 409 */
    GW_RESULT_UNAVAILABLE, /* 503: no online shard, journal unavailable */
    GW_RESULT_ERROR,       /* 500 */
    GW_RESULT_COUNT
};

/* How a reload ended; the `result` label of shardgate_reloads_total (docs/api.md §15). */
enum gw_reload_result {
    GW_RELOAD_RESULT_APPLIED,
    GW_RELOAD_RESULT_UNCHANGED,
    GW_RELOAD_RESULT_REFUSED,
    GW_RELOAD_RESULT_COUNT
};

/* Where a feed page came from; the `source` label of shardgate_feed_pages_total. */
enum gw_feed_source {
    GW_FEED_SOURCE_READ,   /* read from the journal (or the database) and rendered */
    GW_FEED_SOURCE_SHARED, /* the copy of a page made for the same question (docs/api.md §17) */
    GW_FEED_SOURCE_COUNT
};

#define GW_HISTOGRAM_BUCKETS 14

struct gw_histogram {
    atomic_ullong buckets[GW_HISTOGRAM_BUCKETS]; /* not cumulative; rendered cumulative */
    atomic_ullong count;
    atomic_ullong sum_ns;
};

struct gw_metrics {
    atomic_ullong batches[GW_RESULT_COUNT];
    atomic_ullong changes;       /* changes in accepted batches */
    atomic_ullong over_capacity; /* accepted batches whose receipt has a shard over capacity */
    atomic_ullong feed_lag_sum, feed_lag_count; /* feed requests: head - after when they came */
    atomic_ullong commits;                      /* journal group commits */
    atomic_ullong records;                      /* receipt records journaled */
    atomic_ullong epoch_seq;                    /* epoch_seq of the published view */
    atomic_ullong reloads[GW_RELOAD_RESULT_COUNT];
    _Atomic double reload_success_s; /* Unix time of the start or the last reload that passed */
    atomic_ullong feed_pages[GW_FEED_SOURCE_COUNT];
    atomic_ullong record_damage;    /* journal lines read that failed their check */
    atomic_ullong row_damage;       /* receipt rows read that failed theirs (--store postgres) */
    atomic_ullong cut_head_timeout; /* connections shut down past --header-timeout */
    atomic_ullong cut_evicted;      /* shut down to make room for a new one (docs/api.md §1) */
    atomic_ullong scrub_passes;     /* complete passes of the scrub */
    atomic_ullong scrub_last_pass;  /* Unix time the last one ended, 0: none */
    atomic_ullong scrub_bytes;      /* bytes the scrub read */
    struct gw_histogram fsync;      /* journal fdatasync, seconds */
    struct gw_shard_counts over_capacity_by_shard; /* `over_capacity`, by each shard over it */
};

void gw_metrics_init(struct gw_metrics *m);
void gw_metrics_free(struct gw_metrics *m);

/* Counts a finished POST /v1/batches; `changes` and `over_capacity` (its receipt names a shard
 * over capacity) count only for accepted batches. */
void gw_metrics_batch(struct gw_metrics *m, enum gw_batch_result result, uint64_t changes,
                      int over_capacity);

/* Counts, for an accepted batch of topology `t` with per-shard tallies `tally` (membership
 * order), each shard its receipt names over capacity (docs/contract.md §5). */
void gw_metrics_over_capacity_shards(struct gw_metrics *m, const struct gw_topology *t,
                                     const struct gw_tally *tally);

/* Counts a feed request that asked after `after` while the head was `head` (docs/api.md §8). */
void gw_metrics_feed_lag(struct gw_metrics *m, uint64_t head, uint64_t after);

/* Counts one group commit of `records` records whose fdatasync took `sync_ns`. */
void gw_metrics_commit(struct gw_metrics *m, uint64_t records, uint64_t sync_ns);

/* Counts one reload by how it ended. */
void gw_metrics_reload(struct gw_metrics *m, enum gw_reload_result result);

/* Counts one feed page answered (200) by where it came from. */
void gw_metrics_feed_page(struct gw_metrics *m, enum gw_feed_source source);

/* A histogram at zero; one observation of `ns` into it. */
void gw_histogram_init(struct gw_histogram *h);
void gw_metrics_observe(struct gw_histogram *h, uint64_t ns);
/* A histogram's samples, cumulative; `labels` ("" or `a="x",b="y"`) go before `le`. */
void gw_histogram_samples(struct gw_buf *out, const char *name, const char *labels,
                          struct gw_histogram *h);
/* A series' "# HELP" and "# TYPE" lines. */
void gw_metrics_header(struct gw_buf *out, const char *name, const char *type, const char *help);

/* The feed (docs/api.md §17) when /metrics renders: its pages' memory, its watchers, its head. */
struct gw_feed_figures {
    uint64_t held, limit, refused;
    unsigned watchers, max_watchers;
    uint64_t head;
};

/* Appends every series; `totals` holds the cumulative per-shard totals in membership order (NULL:
 * the store could not be read, shardgate_store_up 0 and no per-shard totals),
 * `ready` the readiness /readyz reports, `views_alive` the views not yet freed. */
void gw_metrics_render(struct gw_buf *out, struct gw_metrics *m, const struct gw_topology *t,
                       const struct gw_total *totals, int ready, long views_alive,
                       const struct gw_feed_figures *feed);

#endif
