/* `shardgate plan` (docs/tools.md §1): what a membership or contract change would move, before
 * it is applied. Reads files only; writes nothing. */
#include "cli.h"
#include "options.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "journal_walk.h"
#include "plan.h"
#include "ring_svg.h"
#include "spill.h"
#include "topology.h"

const char gw_usage_plan[] =
    "usage: shardgate plan --conf FILE --shards CURRENT --to NEW [--to-conf FILE]\n"
    "                      [--journal FILE] [--svg FILE] [--ranges]\n"
    "Prints the movement plan from the current membership to NEW (one line of JSON):\n"
    "moved hash values by arc arithmetic, per pair and per shard; with --journal, how many\n"
    "journaled changes and how much load would move. --to-conf defaults to --conf. --svg\n"
    "writes the current ring drawn with the arcs that would move around it to FILE, or, for -,\n"
    "alone to stdout (no plan). --ranges lists every range of hash values that moves.\n"
    "exit: 0 ok, 2 a ring with no online shard or an unreadable journal, 3 contract/membership\n"
    "      unusable, 64 usage, 1 internal error. --conf defaults to $SHARDGATE_CONF.\n";

struct plan_args {
    const char *conf, *shards, *to, *to_conf, *journal, *svg;
    int ranges;
};

static int plan_usage(const char *what)
{
    fprintf(stderr, "shardgate: %s\n%s", what, gw_usage_plan);
    return GW_EXIT_USAGE;
}

/* Returns -1 when the command should go on, else the exit code. */
static int parse_plan_args(int argc, char **argv, struct plan_args *a)
{
    static const struct option options[] = {{"conf", required_argument, 0, 'c'},
                                            {"shards", required_argument, 0, 's'},
                                            {"to", required_argument, 0, 't'},
                                            {"to-conf", required_argument, 0, 'T'},
                                            {"journal", required_argument, 0, 'j'},
                                            {"svg", required_argument, 0, 'g'},
                                            {"ranges", no_argument, 0, 'r'},
                                            {"help", no_argument, 0, 'h'},
                                            {0, 0, 0, 0}};
    memset(a, 0, sizeof(*a));
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+", options, NULL)) != -1) {
        if (c == 'h') {
            fputs(gw_usage_plan, stdout);
            return GW_EXIT_OK;
        }
        if (c == '?') {
            char msg[200];
            gw_cli_bad_option(options, argv, msg, sizeof(msg));
            return plan_usage(msg);
        }
        if (c == 'r') {
            a->ranges = 1;
            continue;
        }
        const char **slot = c == 'c'   ? &a->conf
                            : c == 's' ? &a->shards
                            : c == 't' ? &a->to
                            : c == 'T' ? &a->to_conf
                            : c == 'g' ? &a->svg
                                       : &a->journal;
        *slot = optarg;
    }
    if (optind < argc) {
        char msg[120];
        gw_cli_unexpected(argv[optind], msg, sizeof(msg));
        return plan_usage(msg);
    }
    if (!a->shards || !a->to)
        return plan_usage("--shards FILE and --to FILE are required");
    a->conf = gw_conf_path(a->conf);
    if (!a->to_conf)
        a->to_conf = a->conf;
    return -1;
}

static const char *const OUT_OF_MEMORY = GW_CLI_WALK_NO_MEMORY;

/* Under a spill contract on the to side: replays one receipt's changes in order on the to ring,
 * loads from 0 (docs/contract.md §9), and counts those that would spill (docs/tools.md §1.1).
 * The placements were checked by count_receipt. Returns NULL or OUT_OF_MEMORY. */
static const char *count_spills(struct gw_plan *p, const struct gw_topology *to, json_t *placements)
{
    struct gw_spill w;
    if (gw_spill_init(&w, to) != 0)
        return OUT_OF_MEMORY;
    size_t i;
    json_t *pl;
    int rc = 0;
    json_array_foreach(placements, i, pl)
    {
        json_t *key = json_object_get(pl, "key");
        struct ring_placement at;
        uint32_t home;
        ring_lookup(to->ring, json_string_value(key), json_string_length(key), &at);
        rc = gw_spill_place(&w, &at, (uint64_t)json_integer_value(json_object_get(pl, "size")),
                            &home);
        if (rc < 0)
            break;
        p->spilled += (uint64_t)rc;
    }
    gw_spill_free(&w);
    return rc < 0 ? OUT_OF_MEMORY : NULL;
}

/* Counts the placements of one receipt record's receipt; returns 0 or a message. */
static const char *count_receipt(struct gw_plan *p, const struct gw_topology *from,
                                 const struct gw_topology *to, json_t *receipt)
{
    json_t *placements = json_object_get(receipt, "placements");
    if (!json_is_array(placements))
        return "receipt.placements: must be an array";
    size_t i;
    json_t *pl;
    json_array_foreach(placements, i, pl)
    {
        json_t *key = json_object_get(pl, "key"), *size = json_object_get(pl, "size");
        if (!json_is_string(key) || !json_is_integer(size) || json_integer_value(size) < 0)
            return "receipt.placements: each needs a string key and an integer size >= 0";
        gw_plan_add_change(p, from, to, json_string_value(key), json_string_length(key),
                           (uint64_t)json_integer_value(size));
    }
    return p->counts_spills ? count_spills(p, to, placements) : NULL;
}

/* One complete journal line: receipt records are counted; epoch records, segment headers and
 * seals skipped. */
static const char *count_line(struct gw_plan *p, const struct gw_topology *from,
                              const struct gw_topology *to, const char *line, size_t len)
{
    json_error_t jerr;
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!root)
        return "not JSON";
    const char *type = json_string_value(json_object_get(root, "type"));
    const char *bad = NULL;
    if (type && strcmp(type, "receipt") == 0)
        bad = count_receipt(p, from, to, json_object_get(root, "receipt"));
    else if (!type || (strcmp(type, "epoch") != 0 && strcmp(type, "segment") != 0 &&
                       strcmp(type, "seal") != 0))
        bad = "type: must be epoch or receipt";
    json_decref(root);
    return bad;
}

/* The plan and the two epochs a journal's lines are counted against. */
struct count_ctx {
    struct gw_plan *p;
    const struct gw_topology *from, *to;
};

static const char *count_one(void *ctx, const char *line, size_t len)
{
    struct count_ctx *c = ctx;
    return count_line(c->p, c->from, c->to, line, len);
}

/* Reads the state dir of J as `journal verify` does (docs/journal.md §8): the sealed segments
 * present, in order, then J, every line of a checked segment checked. Archived segments are not
 * at hand and not counted. */
static int count_journal(struct gw_plan *p, const struct gw_topology *from,
                         const struct gw_topology *to, const char *path)
{
    struct count_ctx c = {p, from, to};
    p->has_journal = 1;
    p->counts_spills = to->contract.policy == GW_POLICY_SPILL;
    int rc = gw_cli_walk_journal("plan", path, count_one, &c);
    if (rc == GW_EXIT_INTERNAL)
        fprintf(stderr, "plan: out of memory\n");
    return rc;
}

static int print_plan(const struct gw_plan *p)
{
    struct gw_buf out;
    gw_buf_init(&out);
    gw_plan_write(&out, p);
    gw_buf_puts(&out, "\n");
    int rc = out.failed ? GW_EXIT_INTERNAL : GW_EXIT_OK;
    if (rc == GW_EXIT_OK && (fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout)))
        rc = GW_EXIT_INTERNAL;
    gw_buf_free(&out);
    return rc;
}

/* The current ring with the arcs that would move (docs/tools.md §1.3). */
static int write_svg(const char *path, const struct gw_topology *from, const struct gw_topology *to)
{
    struct gw_buf svg;
    gw_buf_init(&svg);
    int rc;
    if (gw_ring_svg_moves(&svg, from, to) != 0) {
        fprintf(stderr, "plan: --svg: %s\n", OUT_OF_MEMORY); /* both rings have points here */
        rc = GW_EXIT_INTERNAL;
    } else {
        rc = gw_cli_write(path, &svg);
    }
    gw_buf_free(&svg);
    return rc;
}

static int plan_between(const struct plan_args *a, const struct gw_topology *from,
                        const struct gw_topology *to)
{
    struct gw_plan p;
    struct gw_error err;
    int rc = gw_plan_compute(from, to, a->ranges, &p, &err);
    if (rc != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return gw_exit_for(rc, GW_EXIT_NOT_OK);
    }
    rc = a->journal ? count_journal(&p, from, to, a->journal) : GW_EXIT_OK;
    if (rc == GW_EXIT_OK && a->svg)
        rc = write_svg(a->svg, from, to);
    if (rc == GW_EXIT_OK && !(a->svg && gw_cli_is_stdout(a->svg))) /* --svg -: the drawing alone */
        rc = print_plan(&p);
    gw_plan_free(&p);
    return rc;
}

int gw_cmd_plan(int argc, char **argv)
{
    struct plan_args a;
    int rc = parse_plan_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    struct gw_topology from, to;
    rc = gw_exit_load_topology(a.conf, a.shards, &from);
    if (rc != GW_EXIT_OK)
        return rc;
    rc = gw_exit_load_topology(a.to_conf, a.to, &to);
    if (rc == GW_EXIT_OK) {
        rc = plan_between(&a, &from, &to);
        gw_topology_free(&to);
    }
    gw_topology_free(&from);
    return rc;
}
