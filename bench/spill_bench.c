/* Spill cost per change against report on the same batch and ring, rounds interleaved. */
/* Timed with the thread's CPU clock, so other processes on a shared machine do not inflate
 * either side: docs/performance.md §8. Prints one JSON line. */
#include <errno.h>
#include <time.h>

#include "batch.h"
#include "bench_util.h"
#include "buf.h"
#include "dispatch.h"
#include "fileio.h"
#include "receipt.h"
#include "topology.h"

enum { REPORT, SPILL, SIDES, ROUNDS_MAX = 32 };

static double cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Places the batch and writes its receipt; adds place and receipt ns. Returns spilled, or -1. */
static long one(const struct gw_topology *t, const struct gw_batch *b, struct gw_buf *out,
                double *place, double *receipt)
{
    struct gw_dispatch d;
    struct gw_error err;
    double t0 = cpu_ns();
    if (gw_dispatch_run(t, b, &d, &err) != 0) {
        fprintf(stderr, "spill_bench: %s\n", err.msg);
        return -1;
    }
    double t1 = cpu_ns();
    gw_buf_reset(out);
    gw_receipt_write(out, t, b, &d);
    double t2 = cpu_ns();
    *place = t1 - t0;
    *receipt = t2 - t1;
    long spilled = (long)d.spilled;
    gw_dispatch_free(&d);
    return out->failed ? -1 : spilled;
}

static int load(const char *conf, const char *shards, struct gw_topology *t)
{
    struct gw_error err;
    if (gw_topology_load(conf, shards, t, &err) != 0) {
        fprintf(stderr, "spill_bench: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int run(struct gw_topology *t, const struct gw_batch *b, int rounds)
{
    static double place[SIDES][ROUNDS_MAX], receipt[SIDES][ROUNDS_MAX], total[SIDES][ROUNDS_MAX];
    struct gw_buf out;
    gw_buf_init(&out);
    long spilled = 0;
    for (int r = 0; r < rounds; r++)
        for (int s = 0; s < SIDES; s++) {
            long n = one(&t[s], b, &out, &place[s][r], &receipt[s][r]);
            if (n < 0) {
                gw_buf_free(&out);
                return -1;
            }
            spilled = s == SPILL ? n : spilled;
            total[s][r] = (place[s][r] + receipt[s][r]) / (double)b->count;
            place[s][r] /= (double)b->count;
        }
    gw_buf_free(&out);
    double pr = bench_median(place[REPORT], (size_t)rounds);
    double ps = bench_median(place[SPILL], (size_t)rounds);
    double tr = bench_median(total[REPORT], (size_t)rounds);
    double ts = bench_median(total[SPILL], (size_t)rounds);
    printf("{\"changes\": %zu, \"spilled\": %ld, \"rounds\": %d, \"report_place_ns\": %.1f, "
           "\"spill_place_ns\": %.1f, \"report_ns\": %.1f, \"spill_ns\": %.1f, "
           "\"ratio_place\": %.3f, \"ratio\": %.3f}\n",
           b->count, spilled, rounds, pr, ps, tr, ts, ps / pr, ts / tr);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 6 || atoi(argv[5]) < 1 || atoi(argv[5]) > ROUNDS_MAX) {
        fprintf(stderr, "usage: spill_bench REPORT_CONF SPILL_CONF SHARDS BATCH ROUNDS<=32\n");
        return 64;
    }
    struct gw_topology t[SIDES];
    if (load(argv[1], argv[3], &t[REPORT]) != 0)
        return 3;
    if (load(argv[2], argv[3], &t[SPILL]) != 0)
        return 3;
    char *text;
    size_t len;
    struct gw_batch b;
    struct gw_error err;
    int rc = gw_file_read(argv[4], &text, &len);
    if (rc != 0 || gw_batch_parse(text, len, GW_MAX_CHANGES_DEFAULT, &b, &err) != 0) {
        fprintf(stderr, "spill_bench: %s: cannot read the batch\n", argv[4]);
        return 1;
    }
    rc = run(t, &b, atoi(argv[5]));
    gw_batch_free(&b);
    free(text);
    gw_topology_free(&t[REPORT]);
    gw_topology_free(&t[SPILL]);
    return rc == 0 ? 0 : 1;
}
