/* `shardgate moves` (docs/tools.md §1.4): the ranges of the hash space that moved between two
 * epochs of a state dir's journal, from their epoch records, as `plan --ranges` gives them.
 * Reads files only; locks and writes nothing. */
#include "cli.h"
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "journal_walk.h"
#include "number.h"
#include "plan.h"
#include "records.h"
#include "topology.h"

const char gw_usage_moves[] =
    "usage: shardgate moves --state-dir D --from N --to M\n"
    "Prints every range of the hash space (or of a table's slots) whose owner differs between\n"
    "epoch N and epoch M of the journal in D (epoch_seq numbers, as GET /v1/epochs lists them),\n"
    "with the shard it leaves and the one it goes to: the plan of `shardgate plan --ranges`\n"
    "between the two epochs' contracts and memberships, read from their epoch records (one line\n"
    "of JSON). The segments present are read, each line's checksum checked; nothing is locked\n"
    "or written, so D may be a live gateway's.\n"
    "exit: 0 ok, 2 an epoch not in the segments present, a ring with no online shard, or two\n"
    "      epochs with no plan between them; 3 an epoch record unusable; 64 usage; 1 internal.\n";

struct moves_args {
    const char *dir;
    uint64_t seq[2]; /* from, to */
};

static int moves_usage(const char *what)
{
    fprintf(stderr, "shardgate: %s\n%s", what, gw_usage_moves);
    return GW_EXIT_USAGE;
}

/* An epoch_seq operand: 1..2^63. Returns 0 or -1. */
static int parse_seq(const char *text, uint64_t *out)
{
    return text[0] != '0' && gw_parse_u64(text, 1, INT64_MAX, out) == 0 ? 0 : -1;
}

/* Returns -1 when the command should go on, else the exit code. */
static int parse_moves_args(int argc, char **argv, struct moves_args *a)
{
    static const struct option options[] = {{"state-dir", required_argument, 0, 'd'},
                                            {"from", required_argument, 0, 'f'},
                                            {"to", required_argument, 0, 't'},
                                            {"help", no_argument, 0, 'h'},
                                            {0, 0, 0, 0}};
    memset(a, 0, sizeof(*a));
    optind = 1;
    opterr = 0;
    int c, seen[2] = {0, 0};
    while ((c = getopt_long(argc, argv, "+", options, NULL)) != -1) {
        if (c == 'h') {
            fputs(gw_usage_moves, stdout);
            return GW_EXIT_OK;
        }
        if (c == '?') {
            char msg[200];
            gw_cli_bad_option(options, argv, msg, sizeof(msg));
            return moves_usage(msg);
        }
        if (c == 'd') {
            a->dir = optarg;
            continue;
        }
        int k = c == 't';
        seen[k] = 1;
        if (parse_seq(optarg, &a->seq[k]) != 0)
            return moves_usage(k ? "--to: an epoch_seq, an integer 1 or more"
                                 : "--from: an epoch_seq, an integer 1 or more");
    }
    if (optind < argc) {
        char msg[120];
        gw_cli_unexpected(argv[optind], msg, sizeof(msg));
        return moves_usage(msg);
    }
    if (!a->dir || !seen[0] || !seen[1])
        return moves_usage("--state-dir D, --from N and --to M are required");
    return -1;
}

/* What the walk looks for and finds: the two epochs' topologies. */
struct find {
    const uint64_t *want;
    struct gw_topology topo[2];
    int found[2];
    uint64_t records; /* epoch records read, repeats excluded: a legacy record's epoch_seq */
    int after_header; /* the line before was a segment header: an epoch record is its repeat */
    int unusable;     /* the fault is an epoch record that cannot be used (exit 3) */
    char why[sizeof(((struct gw_error *)0)->msg)];
};

/* Builds the topology of an epoch record for each wanted epoch_seq it is. */
static const char *take_epoch(struct find *f, json_t *root, uint64_t seq)
{
    for (int k = 0; k < 2; k++) {
        if (f->want[k] != seq || f->found[k])
            continue;
        struct gw_contract c;
        struct gw_membership m;
        struct gw_epoch_entry e;
        struct gw_error err;
        int rc = gw_epoch_record_read(root, &c, &m, &e, &err);
        if (rc == 0)
            rc = gw_topology_build(&c, &m, &f->topo[k], &err);
        if (rc == -ENOMEM)
            return GW_CLI_WALK_NO_MEMORY;
        if (rc != 0) {
            f->unusable = 1;
            snprintf(f->why, sizeof(f->why), "%s", err.msg);
            return f->why;
        }
        f->found[k] = 1;
    }
    return f->found[0] && f->found[1] ? GW_CLI_WALK_STOP : NULL;
}

static const char *visit_line(void *ctx, const char *line, size_t len)
{
    static const char epoch[] = "{\"type\":\"epoch\"", header[] = "{\"type\":\"segment\"";
    struct find *f = ctx;
    int repeat = f->after_header;
    f->after_header = len >= sizeof(header) - 1 && memcmp(line, header, sizeof(header) - 1) == 0;
    if (len < sizeof(epoch) - 1 || memcmp(line, epoch, sizeof(epoch) - 1) != 0 || repeat)
        return NULL;
    f->records++;
    json_error_t jerr;
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return "epoch record: not JSON";
    json_t *seq = json_object_get(root, "epoch_seq");
    const char *bad =
        seq && !json_is_integer(seq)
            ? "epoch record: epoch_seq must be an integer"
            : take_epoch(f, root, seq ? (uint64_t)json_integer_value(seq) : f->records);
    json_decref(root);
    return bad;
}

static int print_moves(const struct gw_topology *from, const struct gw_topology *to)
{
    struct gw_plan p;
    struct gw_error err;
    int rc = gw_plan_compute(from, to, 1, &p, &err);
    if (rc != 0) {
        fprintf(stderr, "moves: %s\n", err.msg);
        return gw_exit_for(rc, GW_EXIT_NOT_OK);
    }
    struct gw_buf out;
    gw_buf_init(&out);
    gw_plan_write(&out, &p);
    gw_buf_puts(&out, "\n");
    rc = out.failed ? GW_EXIT_INTERNAL : gw_cli_write(NULL, &out);
    gw_buf_free(&out);
    gw_plan_free(&p);
    return rc;
}

int gw_cmd_moves(int argc, char **argv)
{
    struct moves_args a;
    int rc = parse_moves_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    char journal[4200];
    snprintf(journal, sizeof(journal), "%s/journal.jsonl", a.dir);
    struct find f = {.want = a.seq};
    rc = gw_cli_walk_journal("moves", journal, visit_line, &f);
    if (rc == GW_EXIT_INTERNAL)
        fprintf(stderr, "moves: out of memory\n");
    if (rc == GW_EXIT_NOT_OK && f.unusable)
        rc = GW_EXIT_UNUSABLE;
    for (int k = 0; rc == GW_EXIT_OK && k < 2; k++)
        if (!f.found[k]) {
            fprintf(stderr,
                    "moves: %s: no epoch record with epoch_seq %llu in the segments present "
                    "(GET /v1/epochs lists the chain; an archived segment's are not read)\n",
                    a.dir, (unsigned long long)a.seq[k]);
            rc = GW_EXIT_NOT_OK;
        }
    if (rc == GW_EXIT_OK)
        rc = print_moves(&f.topo[0], &f.topo[1]);
    for (int k = 0; k < 2; k++)
        if (f.found[k])
            gw_topology_free(&f.topo[k]);
    return rc;
}
