/* Gateway benchmark (docs/performance.md §3): the in-process job parse + place + receipt per
 * change, through the gateway library itself. Writes the receipt (as `shardgate dispatch` prints
 * it) so run.sh can compare it byte for byte with bench/reference.py's. */
#include <errno.h>

#include "batch.h"
#include "bench_util.h"
#include "buf.h"
#include "dispatch.h"
#include "fileio.h"
#include "receipt.h"
#include "topology.h"

struct opts {
    const char *conf, *shards, *batch, *out, *json;
    int rounds;
};

enum { PARSE, PLACE, RECEIPT, PHASES };
static const char *const phase_names[PHASES] = {"parse", "place", "receipt"};

/* One run of the job; adds each phase's ns to t[] and leaves the receipt in `out`. */
static int run_job(const struct gw_topology *t, const char *text, size_t len, struct gw_buf *out,
                   double *ns, size_t *changes)
{
    struct gw_batch b;
    struct gw_dispatch d;
    struct gw_error err;
    double t0 = bench_now_ns();
    if (gw_batch_parse(text, len, GW_MAX_CHANGES_DEFAULT, &b, &err) != 0) {
        fprintf(stderr, "gateway_bench: batch: %s\n", err.msg);
        return -1;
    }
    double t1 = bench_now_ns();
    if (gw_dispatch_run(t, &b, &d, &err) != 0) {
        fprintf(stderr, "gateway_bench: dispatch: %s\n", err.msg);
        gw_batch_free(&b);
        return -1;
    }
    double t2 = bench_now_ns();
    gw_buf_reset(out);
    gw_receipt_write(out, t, &b, &d);
    gw_buf_puts(out, "\n");
    double t3 = bench_now_ns();
    ns[PARSE] = t1 - t0;
    ns[PLACE] = t2 - t1;
    ns[RECEIPT] = t3 - t2;
    *changes = b.count;
    gw_dispatch_free(&d);
    gw_batch_free(&b);
    return out->failed ? -1 : 0;
}

static int write_file(const char *path, const struct gw_buf *b)
{
    FILE *f = fopen(path, "wb");
    int bad = !f || fwrite(b->data, 1, b->len, f) != b->len;
    if (f)
        bad |= fclose(f) != 0;
    if (bad)
        fprintf(stderr, "gateway_bench: cannot write %s\n", path);
    return bad ? -1 : 0;
}

static void report(const struct opts *o, double (*ns)[PHASES + 1], size_t changes)
{
    double med[PHASES + 1], col[32];
    for (int p = 0; p <= PHASES; p++) {
        for (int r = 0; r < o->rounds; r++)
            col[r] = ns[r][p] / (double)changes;
        med[p] = bench_median(col, (size_t)o->rounds);
    }
    printf("gateway_bench: %zu changes: %.1f ns per change (parse %.1f, place %.1f, receipt "
           "%.1f; median of %d)\n",
           changes, med[PHASES], med[PARSE], med[PLACE], med[RECEIPT], o->rounds);
    FILE *f = o->json ? fopen(o->json, "w") : NULL;
    if (!f)
        return;
    fprintf(f, "{\"changes\": %zu, \"rounds\": %d, \"ns_per_change\": %.2f", changes, o->rounds,
            med[PHASES]);
    for (int p = 0; p < PHASES; p++)
        fprintf(f, ", \"%s_ns_per_change\": %.2f", phase_names[p], med[p]);
    fputs("}\n", f);
    fclose(f);
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){NULL, NULL, NULL, NULL, NULL, 5};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *v = argv[i + 1];
        if (strcmp(argv[i], "--conf") == 0)
            o->conf = v;
        else if (strcmp(argv[i], "--shards") == 0)
            o->shards = v;
        else if (strcmp(argv[i], "--batch") == 0)
            o->batch = v;
        else if (strcmp(argv[i], "--out") == 0)
            o->out = v;
        else if (strcmp(argv[i], "--json") == 0)
            o->json = v;
        else if (strcmp(argv[i], "--rounds") == 0)
            o->rounds = atoi(v);
        else
            return -1;
    }
    return argc % 2 == 1 && o->conf && o->shards && o->batch && o->out && o->rounds >= 1 &&
                   o->rounds <= 32
               ? 0
               : -1;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (parse_opts(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: gateway_bench --conf F --shards F --batch F --out RECEIPT "
                        "[--rounds N<=32] [--json F]\n");
        return 64;
    }
    struct gw_topology t;
    struct gw_error err;
    char *text;
    size_t len, changes = 0;
    if (gw_topology_load(o.conf, o.shards, &t, &err) != 0) {
        fprintf(stderr, "gateway_bench: %s\n", err.msg);
        return 3;
    }
    int rc = gw_file_read(o.batch, &text, &len);
    if (rc != 0) {
        fprintf(stderr, "gateway_bench: %s: %s\n", o.batch, strerror(-rc));
        return 1;
    }
    struct gw_buf out;
    gw_buf_init(&out);
    double ns[32][PHASES + 1];
    for (int r = 0; rc == 0 && r < o.rounds; r++) {
        rc = run_job(&t, text, len, &out, ns[r], &changes);
        ns[r][PHASES] = ns[r][PARSE] + ns[r][PLACE] + ns[r][RECEIPT];
    }
    if (rc == 0)
        rc = write_file(o.out, &out);
    if (rc == 0)
        report(&o, ns, changes);
    gw_buf_free(&out);
    free(text);
    gw_topology_free(&t);
    return rc == 0 ? 0 : 1;
}
