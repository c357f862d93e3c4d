/* Plan benchmark (docs/performance.md §7): gw_plan_compute between two rings of N
 * shards x 160 VNODES for four changes (one shard added, one taken offline, 1% of weights
 * doubled, and the ring hash sha1 -> md5: the worst case, ~all values move, a pair per arc), next
 * to the build time of the same rings as a baseline in the same run; then the same plan with its
 * ranges (`plan --ranges`): how many and in what time. Exits 1 when a plan breaks its sums
 * (pairs = moved_points = the ranges' lengths, before = after = 2^32). */
#include <stdio.h>

#include "bench_util.h"
#include "buf.h"
#include "plan.h"
#include "topology.h"

enum change { ADD_ONE, ONE_OFFLINE, WEIGHTS, REHASH, CHANGES };
static const char *const change_names[CHANGES] = {"one shard added", "one shard offline",
                                                  "1% of weights doubled", "ring hash sha1 -> md5"};

/* The membership JSON of n shards "shard-00000".., changed as `c` says (or not, c < 0). */
static void membership_text(struct gw_buf *out, size_t n, int c)
{
    gw_buf_puts(out, "{\"shards\":[");
    size_t total = c == ADD_ONE ? n + 1 : n;
    for (size_t i = 0; i < total; i++) {
        char line[160];
        int offline = c == ONE_OFFLINE && i == n / 2;
        unsigned weight = c == WEIGHTS && i % 100 == 7 ? 2 : 1;
        snprintf(line, sizeof(line),
                 "%s{\"id\":\"shard-%05zu\",\"state\":\"%s\",\"capacity\":100,\"weight\":%u}",
                 i ? "," : "", i, offline ? "offline" : "online", weight);
        gw_buf_puts(out, line);
    }
    gw_buf_puts(out, "]}");
}

/* Builds the topology of n shards changed by c; returns the build time in ms or -1. */
static double build(size_t n, int c, struct gw_topology *t)
{
    struct gw_contract contract = {
        .digest = c == REHASH ? RING_MD5 : RING_SHA1, .vnodes = 160, .policy = GW_POLICY_REPORT};
    struct gw_membership m;
    struct gw_error err;
    struct gw_buf text;
    gw_buf_init(&text);
    membership_text(&text, n, c);
    int rc = text.failed ? -1 : gw_membership_parse(text.data, text.len, "bench", &m, &err);
    gw_buf_free(&text);
    double t0 = bench_now_ns();
    if (rc == 0)
        rc = gw_topology_build(&contract, &m, t, &err);
    if (rc != 0) {
        fprintf(stderr, "plan_bench: %s\n", err.msg);
        return -1;
    }
    return (bench_now_ns() - t0) / 1e6;
}

static int sums_hold(const struct gw_plan *p)
{
    uint64_t pairs = 0, before = 0, after = 0;
    for (size_t i = 0; i < p->pair_count; i++)
        pairs += p->pairs[i].moved_points;
    for (size_t i = 0; i < p->shard_count; i++) {
        before += p->shards[i].before;
        after += p->shards[i].after;
    }
    return pairs == p->moved_points && before == GW_PLAN_HASH_SPACE && after == GW_PLAN_HASH_SPACE;
}

/* The ranges' lengths: they must sum to moved_points. */
static uint64_t range_sum(const struct gw_plan *p)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < p->range_count; i++)
        sum += p->ranges[i].hi - p->ranges[i].lo;
    return sum;
}

/* Median time of `rounds` plans from `from` to `to`, with their ranges when `ranges` is set
 * (their count in *count); -1 when a plan fails its sums. */
static double time_plan(const struct gw_topology *from, const struct gw_topology *to, int rounds,
                        int ranges, double *fraction, size_t *count)
{
    double ms[32];
    for (int r = 0; r < rounds; r++) {
        struct gw_plan p;
        struct gw_error err;
        double t0 = bench_now_ns();
        int rc = gw_plan_compute(from, to, ranges, &p, &err);
        if (rc != 0) {
            fprintf(stderr, "plan_bench: %s\n", err.msg);
            return -1;
        }
        ms[r] = (bench_now_ns() - t0) / 1e6;
        *fraction = gw_plan_fraction(&p);
        *count = p.range_count;
        int good = sums_hold(&p) && (!ranges || range_sum(&p) == p.moved_points);
        gw_plan_free(&p);
        if (!good) {
            fprintf(stderr, "plan_bench: a plan's sums do not hold\n");
            return -1;
        }
    }
    return bench_median(ms, (size_t)rounds);
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    if (n < 2 || n > 100000 || rounds < 1 || rounds > 32) {
        fprintf(stderr, "usage: plan_bench [SHARDS (2..100000, default 10000)] [ROUNDS<=32]\n");
        return 64;
    }
    struct gw_topology from, to;
    double base_ms = build(n, -1, &from);
    if (base_ms < 0)
        return 1;
    printf("plan_bench: %zu shards x 160: ring build %.1f ms (baseline)\n", n, base_ms);
    int rc = 0;
    for (int c = 0; c < CHANGES && rc == 0; c++) {
        double fraction = 0, build_ms = build(n, c, &to);
        size_t ranges = 0;
        double plan_ms = build_ms < 0 ? -1 : time_plan(&from, &to, rounds, 0, &fraction, &ranges);
        double ranges_ms = plan_ms < 0 ? -1 : time_plan(&from, &to, rounds, 1, &fraction, &ranges);
        if (build_ms >= 0)
            gw_topology_free(&to);
        if (plan_ms < 0 || ranges_ms < 0)
            rc = 1;
        else
            printf("plan_bench: %-22s plan %.1f ms (median of %d), moved_fraction %.9f, "
                   "to-ring build %.1f ms; %zu ranges in %.1f ms\n",
                   change_names[c], plan_ms, rounds, fraction, build_ms, ranges, ranges_ms);
    }
    gw_topology_free(&from);
    return rc;
}
