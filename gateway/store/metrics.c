/* Metrics: atomic counters and fixed-bucket histograms, rendered as Prometheus text. */
#include "metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timing.h"
#include "walk.h"

static const double bucket_bounds[GW_HISTOGRAM_BUCKETS] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};

static const char *const result_names[GW_RESULT_COUNT] = {"accepted",  "replayed",    "rejected",
                                                          "in_flight", "unavailable", "error"};

void gw_histogram_init(struct gw_histogram *h)
{
    for (size_t i = 0; i < GW_HISTOGRAM_BUCKETS; i++)
        atomic_init(&h->buckets[i], 0);
    atomic_init(&h->count, 0);
    atomic_init(&h->sum_ns, 0);
}

void gw_metrics_init(struct gw_metrics *m)
{
    for (size_t i = 0; i < GW_RESULT_COUNT; i++)
        atomic_init(&m->batches[i], 0);
    atomic_init(&m->changes, 0);
    atomic_init(&m->commits, 0);
    atomic_init(&m->records, 0);
    atomic_init(&m->epoch_seq, 0);
    for (size_t i = 0; i < GW_RELOAD_RESULT_COUNT; i++)
        atomic_init(&m->reloads[i], 0);
    atomic_init(&m->reload_success_s, gw_unix_s()); /* the start loaded its membership */
    for (size_t i = 0; i < GW_FEED_SOURCE_COUNT; i++)
        atomic_init(&m->feed_pages[i], 0);
    gw_histogram_init(&m->fsync);
    gw_shard_counts_init(&m->over_capacity_by_shard);
}

void gw_metrics_free(struct gw_metrics *m)
{
    gw_shard_counts_free(&m->over_capacity_by_shard);
}

void gw_metrics_over_capacity_shards(struct gw_metrics *m, const struct gw_topology *t,
                                     const struct gw_tally *tally)
{
    for (size_t i = 0; i < t->members.count; i++) {
        const struct gw_shard *sh = &t->members.shards[i];
        if (tally[i].load > sh->capacity) /* out of memory: the series undercounts */
            (void)gw_shard_counts_add(&m->over_capacity_by_shard, sh->id, sh->id_len);
    }
}

void gw_metrics_batch(struct gw_metrics *m, enum gw_batch_result result, uint64_t changes,
                      int over_capacity)
{
    atomic_fetch_add(&m->batches[result], 1);
    if (result != GW_RESULT_ACCEPTED)
        return;
    atomic_fetch_add(&m->changes, changes);
    if (over_capacity)
        atomic_fetch_add(&m->over_capacity, 1);
}

void gw_metrics_feed_lag(struct gw_metrics *m, uint64_t head, uint64_t after)
{
    atomic_fetch_add(&m->feed_lag_sum, head > after ? head - after : 0);
    atomic_fetch_add(&m->feed_lag_count, 1);
}

void gw_metrics_observe(struct gw_histogram *h, uint64_t ns)
{
    double s = (double)ns / 1e9;
    size_t i = 0;
    while (i < GW_HISTOGRAM_BUCKETS && s > bucket_bounds[i])
        i++;
    if (i < GW_HISTOGRAM_BUCKETS)
        atomic_fetch_add(&h->buckets[i], 1);
    atomic_fetch_add(&h->count, 1);
    atomic_fetch_add(&h->sum_ns, ns);
}

void gw_metrics_commit(struct gw_metrics *m, uint64_t records, uint64_t sync_ns)
{
    atomic_fetch_add(&m->commits, 1);
    atomic_fetch_add(&m->records, records);
    gw_metrics_observe(&m->fsync, sync_ns);
}

static void put_f(struct gw_buf *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put_f(struct gw_buf *out, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n > 0)
        gw_buf_append(out, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

void gw_metrics_header(struct gw_buf *out, const char *name, const char *type, const char *help)
{
    put_f(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void gw_histogram_samples(struct gw_buf *out, const char *name, const char *labels,
                          struct gw_histogram *h)
{
    const char *comma = labels[0] ? "," : "";
    unsigned long long cum = 0;
    for (size_t i = 0; i < GW_HISTOGRAM_BUCKETS; i++) {
        cum += atomic_load(&h->buckets[i]);
        put_f(out, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, comma, bucket_bounds[i], cum);
    }
    unsigned long long count = atomic_load(&h->count);
    put_f(out, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, comma, count);
    const char *open = labels[0] ? "{" : "", *close = labels[0] ? "}" : "";
    put_f(out, "%s_sum%s%s%s %.9f\n", name, open, labels, close,
          (double)atomic_load(&h->sum_ns) / 1e9);
    put_f(out, "%s_count%s%s%s %llu\n", name, open, labels, close, count);
}

static void render_histogram(struct gw_buf *out, const char *name, const char *help,
                             struct gw_histogram *h)
{
    gw_metrics_header(out, name, "histogram", help);
    gw_histogram_samples(out, name, "", h);
}

/* A label value: shard ids are [A-Za-z0-9._:-], so they need no escaping. The totals are exact
 * 128-bit decimals: a counter that wrapped would read as a reset (docs/api.md, GET /metrics). */
static void render_shard_series(struct gw_buf *out, const struct gw_topology *t,
                                const struct gw_total *totals, int load)
{
    const char *name = load ? "shardgate_shard_load_total" : "shardgate_shard_received_total";
    gw_metrics_header(out, name, "counter",
                      load
                          ? "Sum of change sizes placed on the shard, over every journaled receipt."
                          : "Number of changes placed on the shard, over every journaled receipt.");
    for (size_t i = 0; i < t->members.count; i++) {
        put_f(out, "%s{shard=\"%s\"} ", name, t->members.shards[i].id);
        gw_buf_u128(out, load ? totals[i].load : totals[i].received);
        gw_buf_puts(out, "\n");
    }
}

/* shardgate_batches_over_capacity_total by shard: every member, 0 when it never was. */
static void render_over_capacity_by_shard(struct gw_buf *out, struct gw_metrics *m,
                                          const struct gw_topology *t)
{
    const char *name = "shardgate_shard_over_capacity_batches_total";
    gw_metrics_header(out, name, "counter",
                      "Accepted batches whose receipt has this shard over its capacity.");
    for (size_t i = 0; i < t->members.count; i++) {
        const struct gw_shard *sh = &t->members.shards[i];
        put_f(out, "%s{shard=\"%s\"} %llu\n", name, sh->id,
              (unsigned long long)gw_shard_counts_get(&m->over_capacity_by_shard, sh->id,
                                                      sh->id_len));
    }
}

/* Each online shard's share of the 2^32 hashes: the sum of what its points own (ring/walk.h);
 * on a Maglev ring, of the table's slots. */
static void render_ring_share(struct gw_buf *out, const struct ring *ring)
{
    size_t n = ring_points_total(ring), shards = ring_shard_count(ring);
    const struct ring_point *p = ring_points(ring);
    uint64_t *owned = calloc(shards ? shards : 1, sizeof(*owned));
    if (!owned) {
        out->failed = 1;
        return;
    }
    for (size_t i = 0; i < n; i++)
        owned[p[i].shard] += ring_point_owns(p, n, i);
    const uint32_t *table = ring_table(ring);
    for (size_t s = 0; table && s < ring_table_size(ring); s++)
        owned[table[s]]++;
    double space = table ? (double)ring_table_size(ring) : (double)RING_HASHES;
    gw_metrics_header(out, "shardgate_ring_share_ratio", "gauge",
                      "The share of the hash space each online shard owns on the ring.");
    for (size_t s = 0; s < shards; s++) {
        gw_buf_puts(out, "shardgate_ring_share_ratio{shard=\"");
        gw_buf_append(out, ring_shard_id(ring, (uint32_t)s), ring_shard_id_len(ring, (uint32_t)s));
        put_f(out, "\"} %.9f\n", (double)owned[s] / space);
    }
    free(owned);
}

static void render_ring(struct gw_buf *out, const struct gw_topology *t)
{
    gw_metrics_header(out, "shardgate_ring_points", "gauge",
                      "Points on the ring (VNODES x weight over the online shards; maglev, jump: "
                      "0).");
    put_f(out, "shardgate_ring_points %zu\n", ring_points_total(t->ring));
    gw_metrics_header(out, "shardgate_ring_info", "gauge", "The ring the gateway places with.");
    if (t->contract.algorithm != RING_KETAMA)
        put_f(out, "shardgate_ring_info{id=\"%s\",algorithm=\"%s\",hash=\"%s\",table=\"%u\"} 1\n",
              ring_id(t->ring), ring_algorithm_name(t->contract.algorithm),
              ring_digest_name(t->contract.digest), (unsigned)t->contract.table);
    else
        put_f(out, "shardgate_ring_info{id=\"%s\",hash=\"%s\",vnodes=\"%u\"} 1\n", ring_id(t->ring),
              ring_digest_name(t->contract.digest), (unsigned)t->contract.vnodes);
    gw_metrics_header(out, "shardgate_ring_online_shards", "gauge", "Online shards in the ring.");
    put_f(out, "shardgate_ring_online_shards %zu\n", ring_shard_count(t->ring));
    render_ring_share(out, t->ring);
    gw_metrics_header(out, "shardgate_shard_capacity", "gauge",
                      "Each online shard's capacity: its share of their sum is the share of the "
                      "load it was given room for.");
    for (size_t i = 0; i < t->members.count; i++) {
        const struct gw_shard *sh = &t->members.shards[i];
        if (sh->state != GW_STATE_ONLINE)
            continue;
        gw_buf_puts(out, "shardgate_shard_capacity{shard=\"");
        gw_buf_append(out, sh->id, sh->id_len);
        put_f(out, "\"} %llu\n", (unsigned long long)sh->capacity);
    }
}

static const char *const reload_names[GW_RELOAD_RESULT_COUNT] = {"applied", "unchanged", "refused"};

void gw_metrics_reload(struct gw_metrics *m, enum gw_reload_result result)
{
    atomic_fetch_add(&m->reloads[result], 1);
    if (result != GW_RELOAD_RESULT_REFUSED)
        atomic_store(&m->reload_success_s, gw_unix_s());
}

static const char *const feed_source_names[GW_FEED_SOURCE_COUNT] = {"read", "shared"};

void gw_metrics_feed_page(struct gw_metrics *m, enum gw_feed_source source)
{
    atomic_fetch_add(&m->feed_pages[source], 1);
}

static void render_feed(struct gw_buf *out, const struct gw_feed_figures *feed)
{
    gw_metrics_header(out, "shardgate_feed_memory_bytes", "gauge",
                      "Bytes of feed pages held: being sent, or kept for the same question.");
    put_f(out, "shardgate_feed_memory_bytes %llu\n", (unsigned long long)feed->held);
    gw_metrics_header(out, "shardgate_feed_memory_limit_bytes", "gauge", "--feed-memory.");
    put_f(out, "shardgate_feed_memory_limit_bytes %llu\n", (unsigned long long)feed->limit);
    gw_metrics_header(out, "shardgate_feed_memory_refusals_total", "counter",
                      "Feed requests answered 503 feed_memory_exhausted.");
    put_f(out, "shardgate_feed_memory_refusals_total %llu\n", (unsigned long long)feed->refused);
    gw_metrics_header(out, "shardgate_feed_watchers", "gauge",
                      "Feed requests in the server, waiting or not.");
    put_f(out, "shardgate_feed_watchers %u\n", feed->watchers);
    gw_metrics_header(out, "shardgate_feed_watchers_limit", "gauge", "--max-watchers.");
    put_f(out, "shardgate_feed_watchers_limit %u\n", feed->max_watchers);
    gw_metrics_header(out, "shardgate_feed_head_seq", "gauge",
                      "The feed's head: every record through this seq is durable.");
    put_f(out, "shardgate_feed_head_seq %llu\n", (unsigned long long)feed->head);
}

void gw_metrics_render(struct gw_buf *out, struct gw_metrics *m, const struct gw_topology *t,
                       const struct gw_total *totals, int ready, long views_alive,
                       const struct gw_feed_figures *feed)
{
    gw_metrics_header(out, "shardgate_batches_total", "counter",
                      "POST /v1/batches answers by result.");
    for (size_t i = 0; i < GW_RESULT_COUNT; i++)
        put_f(out, "shardgate_batches_total{result=\"%s\"} %llu\n", result_names[i],
              atomic_load(&m->batches[i]));
    gw_metrics_header(out, "shardgate_changes_total", "counter", "Changes in accepted batches.");
    put_f(out, "shardgate_changes_total %llu\n", atomic_load(&m->changes));
    gw_metrics_header(out, "shardgate_batches_over_capacity_total", "counter",
                      "Accepted batches whose receipt has a shard over its capacity.");
    put_f(out, "shardgate_batches_over_capacity_total %llu\n", atomic_load(&m->over_capacity));
    render_over_capacity_by_shard(out, m, t);
    gw_metrics_header(out, "shardgate_store_up", "gauge",
                      "1 when the store's totals could be read for this scrape; 0: they are left "
                      "out.");
    put_f(out, "shardgate_store_up %d\n", totals != NULL);
    if (totals) {
        render_shard_series(out, t, totals, 1);
        render_shard_series(out, t, totals, 0);
    }
    render_ring(out, t);
    gw_metrics_header(out, "shardgate_epoch_seq", "gauge",
                      "epoch_seq of the epoch in force (docs/contract.md §7).");
    put_f(out, "shardgate_epoch_seq %llu\n", atomic_load(&m->epoch_seq));
    gw_metrics_header(out, "shardgate_reloads_total", "counter",
                      "Membership reloads (SIGHUP, PUT) by result.");
    for (int i = 0; i < GW_RELOAD_RESULT_COUNT; i++)
        put_f(out, "shardgate_reloads_total{result=\"%s\"} %llu\n", reload_names[i],
              atomic_load(&m->reloads[i]));
    gw_metrics_header(out, "shardgate_reload_last_success_timestamp_seconds", "gauge",
                      "Unix time of the start or of the last reload applied or unchanged.");
    put_f(out, "shardgate_reload_last_success_timestamp_seconds %.3f\n",
          atomic_load(&m->reload_success_s));
    gw_metrics_header(
        out, "shardgate_feed_pages_total", "counter",
        "Feed pages answered, read from the journal or shared with the same question.");
    for (int i = 0; i < GW_FEED_SOURCE_COUNT; i++)
        put_f(out, "shardgate_feed_pages_total{source=\"%s\"} %llu\n", feed_source_names[i],
              atomic_load(&m->feed_pages[i]));
    render_feed(out, feed);
    gw_metrics_header(out, "shardgate_feed_request_lag_records", "summary",
                      "Feed requests: how many records the head was past the cursor they asked "
                      "after.");
    put_f(out, "shardgate_feed_request_lag_records_sum %llu\n", atomic_load(&m->feed_lag_sum));
    put_f(out, "shardgate_feed_request_lag_records_count %llu\n", atomic_load(&m->feed_lag_count));
    gw_metrics_header(out, "shardgate_journal_commits_total", "counter",
                      "Group commits (write + fdatasync).");
    put_f(out, "shardgate_journal_commits_total %llu\n", atomic_load(&m->commits));
    gw_metrics_header(out, "shardgate_journal_records_total", "counter",
                      "Receipt records journaled.");
    put_f(out, "shardgate_journal_records_total %llu\n", atomic_load(&m->records));
    gw_metrics_header(out, "shardgate_record_checksum_failures_total", "counter",
                      "Journal lines read for an answer or a scrub, and receipt rows read "
                      "(--store postgres), that failed their check (docs/journal.md §2.1, §10).");
    put_f(out, "shardgate_record_checksum_failures_total %llu\n",
          atomic_load(&m->record_damage) + atomic_load(&m->row_damage));
    gw_metrics_header(out, "shardgate_connections_cut_total", "counter",
                      "Connections shut down before a complete request head: past "
                      "--header-timeout, or to make room for a new one (docs/api.md §1).");
    put_f(out, "shardgate_connections_cut_total{reason=\"header_timeout\"} %llu\n",
          atomic_load(&m->cut_head_timeout));
    put_f(out, "shardgate_connections_cut_total{reason=\"evicted\"} %llu\n",
          atomic_load(&m->cut_evicted));
    gw_metrics_header(out, "shardgate_scrub_passes_total", "counter",
                      "Complete passes of the journal scrub (--scrub-rate).");
    put_f(out, "shardgate_scrub_passes_total %llu\n", atomic_load(&m->scrub_passes));
    gw_metrics_header(out, "shardgate_scrub_last_pass_timestamp_seconds", "gauge",
                      "Unix time the last complete scrub pass ended; 0 before the first.");
    put_f(out, "shardgate_scrub_last_pass_timestamp_seconds %llu\n",
          atomic_load(&m->scrub_last_pass));
    gw_metrics_header(out, "shardgate_scrub_read_bytes_total", "counter",
                      "Journal bytes the scrub read.");
    put_f(out, "shardgate_scrub_read_bytes_total %llu\n", atomic_load(&m->scrub_bytes));
    gw_metrics_header(out, "shardgate_ready", "gauge", "1 when /readyz answers 200.");
    put_f(out, "shardgate_ready %d\n", ready ? 1 : 0);
    gw_metrics_header(
        out, "shardgate_views_alive", "gauge",
        "Membership views not yet freed: the published one and older ones still in use.");
    put_f(out, "shardgate_views_alive %ld\n", views_alive);
    render_histogram(out, "shardgate_journal_fsync_duration_seconds",
                     "Time of each journal fdatasync.", &m->fsync);
}
