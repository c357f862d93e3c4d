/* The offline commands: dispatch one batch, show the ring, look keys up. */
#include "cli.h"
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "buf.h"
#include "dispatch.h"
#include "fileio.h"
#include "number.h"
#include "receipt.h"
#include "ring_svg.h"
#include "topology.h"

const char gw_usage_dispatch[] =
    "usage: shardgate dispatch --conf FILE --shards FILE --batch FILE [--out FILE]\n"
    "                          [--max-changes N]\n"
    "Places one batch and prints its receipt (one line of JSON).\n"
    "exit: 0 ok, 2 receipt not ok or batch invalid, 3 contract/membership unusable,\n"
    "      64 usage, 1 internal error. --conf defaults to $SHARDGATE_CONF.\n";
const char gw_usage_ring[] =
    "usage: shardgate ring --conf FILE --shards FILE [--points] [--svg FILE]\n"
    "Prints the ring summary; --points adds every point in ring order; --svg writes the ring\n"
    "drawn (one arc per run of points of a shard) to FILE, or, for -, alone to stdout.\n";
const char gw_usage_lookup[] = "usage: shardgate lookup --conf FILE --shards FILE KEY...\n"
                               "Prints the placement of each key, one JSON line per key.\n"
                               "exit: 2 when no shard is online.\n";

enum {
    OPT_CONF = 'c',
    OPT_SHARDS = 's',
    OPT_BATCH = 'b',
    OPT_OUT = 'o',
    OPT_POINTS = 'p',
    OPT_MAX = 'm',
    OPT_SVG = 'g',
    OPT_HELP = 'h'
};

struct cli_args {
    const char *conf, *shards, *batch, *out, *svg;
    int points;
    size_t max_changes;
};

const char *gw_conf_path(const char *from_option)
{
    if (from_option)
        return from_option;
    const char *env = getenv("SHARDGATE_CONF");
    return env && env[0] ? env : NULL;
}

static int usage_error(const char *usage, const char *what)
{
    fprintf(stderr, "shardgate: %s\n%s", what, usage);
    return GW_EXIT_USAGE;
}

static int unexpected(const char *usage, const char *arg)
{
    char msg[120];
    gw_cli_unexpected(arg, msg, sizeof(msg));
    return usage_error(usage, msg);
}

/* Parses the options a command allows (`allowed` lists their short codes). Returns -1 when
 * the command should go on, else the exit code (help printed, or a usage error). */
static int parse_args(int argc, char **argv, const char *allowed, const char *usage,
                      struct cli_args *a)
{
    static const struct option options[] = {{"conf", required_argument, 0, OPT_CONF},
                                            {"shards", required_argument, 0, OPT_SHARDS},
                                            {"batch", required_argument, 0, OPT_BATCH},
                                            {"out", required_argument, 0, OPT_OUT},
                                            {"points", no_argument, 0, OPT_POINTS},
                                            {"max-changes", required_argument, 0, OPT_MAX},
                                            {"svg", required_argument, 0, OPT_SVG},
                                            {"help", no_argument, 0, OPT_HELP},
                                            {0, 0, 0, 0}};
    struct option mine[sizeof(options) / sizeof(options[0])]; /* this command's, for a hint */
    size_t count = 0;
    for (const struct option *o = options; o->name; o++)
        if (o->val == OPT_HELP || strchr(allowed, o->val))
            mine[count++] = *o;
    mine[count] = (struct option){0, 0, 0, 0};
    memset(a, 0, sizeof(*a));
    a->max_changes = GW_MAX_CHANGES_DEFAULT;
    optind = 1;
    opterr = 0;
    int c, index = 0;
    char msg[200];
    while ((c = getopt_long(argc, argv, "+", options, &index)) != -1) {
        if (c == OPT_HELP) {
            fputs(usage, stdout);
            return GW_EXIT_OK;
        }
        if (c == '?' || !strchr(allowed, c)) {
            if (c == '?')
                gw_cli_bad_option(mine, argv, msg, sizeof(msg));
            else
                snprintf(msg, sizeof(msg), "--%s is not an option of `shardgate %s`",
                         options[index].name, argv[0]);
            return usage_error(usage, msg);
        }
        const char **slot = c == OPT_CONF     ? &a->conf
                            : c == OPT_SHARDS ? &a->shards
                            : c == OPT_BATCH  ? &a->batch
                            : c == OPT_OUT    ? &a->out
                            : c == OPT_SVG    ? &a->svg
                                              : NULL;
        if (slot)
            *slot = optarg;
        else if (c == OPT_POINTS)
            a->points = 1;
        else if (c == OPT_MAX) {
            uint64_t n;
            if (gw_parse_u64(optarg, 1, 10000000, &n) != 0)
                return usage_error(usage, "--max-changes must be 1..10000000");
            a->max_changes = (size_t)n;
        }
    }
    a->conf = gw_conf_path(a->conf);
    if (!a->shards)
        return usage_error(usage, "--shards FILE is required");
    return -1;
}

int gw_cli_is_stdout(const char *path)
{
    return !path || strcmp(path, "-") == 0;
}

int gw_cli_write(const char *path, const struct gw_buf *b)
{
    if (gw_cli_is_stdout(path))
        path = NULL;
    FILE *f = path ? fopen(path, "wb") : stdout;
    if (!f) {
        fprintf(stderr, "shardgate: %s: %s\n", path, strerror(errno));
        return GW_EXIT_INTERNAL;
    }
    int bad = fwrite(b->data, 1, b->len, f) != b->len;
    if (path)
        bad |= fclose(f) != 0;
    else
        bad |= fflush(f) != 0;
    if (bad) {
        fprintf(stderr, "shardgate: %s: write failed\n", path ? path : "stdout");
        return GW_EXIT_INTERNAL;
    }
    return GW_EXIT_OK;
}

static int report_over_capacity(const struct gw_topology *t, const struct gw_dispatch *d)
{
    for (size_t i = 0; i < t->members.count; i++) {
        if (gw_dispatch_over_capacity(t, d, i))
            fprintf(stderr, "over_capacity: shard %s load %llu exceeds capacity %llu\n",
                    t->members.shards[i].id, (unsigned long long)d->tally[i].load,
                    (unsigned long long)t->members.shards[i].capacity);
    }
    fprintf(stderr, "dispatch: refused under DISPATCH_CAPACITY_POLICY=reject\n");
    return GW_EXIT_NOT_OK;
}

static int dispatch_batch(const struct cli_args *a, const struct gw_topology *t,
                          const struct gw_batch *b)
{
    struct gw_dispatch d;
    struct gw_error err;
    if (gw_dispatch_run(t, b, &d, &err) != 0) {
        fprintf(stderr, "dispatch: %s\n", err.msg);
        return GW_EXIT_NOT_OK;
    }
    int rc;
    if (!d.ok && d.over_capacity_shards && t->contract.policy == GW_POLICY_REJECT) {
        rc = report_over_capacity(t, &d);
    } else {
        struct gw_buf out;
        gw_buf_init(&out);
        gw_receipt_write(&out, t, b, &d);
        gw_buf_puts(&out, "\n");
        rc = out.failed ? GW_EXIT_INTERNAL : gw_cli_write(a->out, &out);
        if (rc == GW_EXIT_OK && !d.ok)
            rc = GW_EXIT_NOT_OK;
        gw_buf_free(&out);
    }
    gw_dispatch_free(&d);
    return rc;
}

static int load_batch(const struct cli_args *a, struct gw_batch *b)
{
    char *text;
    size_t len;
    struct gw_error err;
    int rc = gw_file_read(a->batch, &text, &len);
    if (rc != 0) {
        fprintf(stderr, "batch: %s: cannot read: %s\n", a->batch, strerror(-rc));
        return GW_EXIT_NOT_OK;
    }
    rc = gw_batch_parse(text, len, a->max_changes, b, &err);
    free(text);
    if (rc != 0) {
        fprintf(stderr, "batch: %s: %s\n", a->batch, err.msg);
        return rc == -ENOMEM ? GW_EXIT_INTERNAL : GW_EXIT_NOT_OK;
    }
    return GW_EXIT_OK;
}

int gw_cmd_dispatch(int argc, char **argv)
{
    struct cli_args a;
    int rc = parse_args(argc, argv, "csbom", gw_usage_dispatch, &a);
    if (rc >= 0)
        return rc;
    if (optind < argc)
        return unexpected(gw_usage_dispatch, argv[optind]);
    if (!a.batch)
        return usage_error(gw_usage_dispatch, "--batch FILE is required");
    struct gw_topology t;
    rc = gw_exit_load_topology(a.conf, a.shards, &t);
    if (rc != GW_EXIT_OK)
        return rc;
    struct gw_batch b;
    rc = load_batch(&a, &b);
    if (rc == GW_EXIT_OK) {
        rc = dispatch_batch(&a, &t, &b);
        gw_batch_free(&b);
    }
    gw_topology_free(&t);
    return rc;
}

/* Renders one command's answer into a buffer; returns an exit code. */
typedef int (*render_fn)(struct gw_buf *out, const struct gw_topology *t, const struct cli_args *a,
                         char **keys, int nkeys);

/* Loads the topology, renders, and prints the answer only if all of it rendered. */
static int print_rendered(const struct cli_args *a, render_fn render, char **keys, int nkeys)
{
    struct gw_topology t;
    int rc = gw_exit_load_topology(a->conf, a->shards, &t);
    if (rc != GW_EXIT_OK)
        return rc;
    struct gw_buf out;
    gw_buf_init(&out);
    rc = render(&out, &t, a, keys, nkeys);
    if (rc == GW_EXIT_OK)
        rc = out.failed ? GW_EXIT_INTERNAL : gw_cli_write(NULL, &out);
    gw_buf_free(&out);
    gw_topology_free(&t);
    return rc;
}

static int render_ring(struct gw_buf *out, const struct gw_topology *t, const struct cli_args *a,
                       char **keys, int nkeys)
{
    (void)keys;
    (void)nkeys;
    if (a->svg && gw_cli_is_stdout(a->svg)) { /* the drawing alone, so it pipes */
        gw_ring_svg(out, t);
        return GW_EXIT_OK;
    }
    if (a->svg) { /* written first: the summary on stdout says the drawing is there */
        struct gw_buf svg;
        gw_buf_init(&svg);
        gw_ring_svg(&svg, t);
        int rc = svg.failed ? GW_EXIT_INTERNAL : gw_cli_write(a->svg, &svg);
        gw_buf_free(&svg);
        if (rc != GW_EXIT_OK)
            return rc;
    }
    gw_ring_write(out, t, a->points);
    gw_buf_puts(out, "\n");
    return GW_EXIT_OK;
}

static int render_lookups(struct gw_buf *out, const struct gw_topology *t, const struct cli_args *a,
                          char **keys, int nkeys)
{
    (void)a;
    for (int i = 0; i < nkeys; i++) {
        struct ring_placement p;
        if (ring_lookup(t->ring, keys[i], strlen(keys[i]), &p) != 0) {
            fprintf(stderr, "lookup: no online shard: the ring is empty\n");
            return GW_EXIT_NOT_OK;
        }
        gw_lookup_write(out, t, keys[i], strlen(keys[i]), &p);
        gw_buf_puts(out, "\n");
    }
    return GW_EXIT_OK;
}

int gw_cmd_ring(int argc, char **argv)
{
    struct cli_args a;
    int rc = parse_args(argc, argv, "cspg", gw_usage_ring, &a);
    if (rc >= 0)
        return rc;
    if (optind < argc)
        return unexpected(gw_usage_ring, argv[optind]);
    return print_rendered(&a, render_ring, NULL, 0);
}

int gw_cmd_lookup(int argc, char **argv)
{
    struct cli_args a;
    int rc = parse_args(argc, argv, "cs", gw_usage_lookup, &a);
    if (rc >= 0)
        return rc;
    if (optind >= argc)
        return usage_error(gw_usage_lookup, "at least one KEY is required");
    return print_rendered(&a, render_lookups, argv + optind, argc - optind);
}
