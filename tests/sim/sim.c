/* The deterministic simulator of the state dir's store (docs/operations.md §5.6): the store,
 * its threads and its disk in one process, driven by a seed. A history is a list of operations
 * (submits new, retried, reused and racing; membership changes; time passing; restarts; crashes
 * at any system call with any prefix of the unsynced writes kept, torn at a sector; EIO, ENOSPC,
 * short writes, failed syncs; bits flipped; archive; the index dropped), each checked against a
 * model. A failure prints the seed, a shrunk history and the command that replays it.
 *
 *   sim [--seed N] [--seeds N] [--ops N] [--history LIST] [--no-flips] [--at-least N]
 *       [--legacy JOURNAL] [--quiet]
 *
 * --legacy: every fourth seed starts from that journal, written before checksums, segments and
 * live membership (tests/golden/legacy-state), and its batches join the model as acknowledged:
 * the upgrade is one more operation among the rest. --seeds runs the seeds N, N+1, ...; --at-least
 * fails a run that reached fewer crash points; the store's log lines (stderr) are dropped unless
 * SIM_TRACE is set, which also names each operation as it runs, or the build is sanitized. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io.h"
#include "sim.h"
#include "sim_disk.h"
#include "sim_rng.h"
#include "sim_sched.h"

static void setup(struct run *r)
{
    snprintf(r->base, sizeof(r->base), "/dev/shm/shardgate-sim-XXXXXX");
    if (!mkdtemp(r->base)) {
        perror("sim: mkdtemp");
        exit(2);
    }
    snprintf(r->state, sizeof(r->state), "%s/state", r->base);
    snprintf(r->archive, sizeof(r->archive), "%s/archive", r->base);
    snprintf(r->conf, sizeof(r->conf), "%s/dispatch.env", r->base);
    snprintf(r->shards, sizeof(r->shards), "%s/shards.json", r->base);
    if (mkdir(r->state, 0750) != 0 || mkdir(r->archive, 0750) != 0) {
        perror("sim: mkdir");
        exit(2);
    }
    /* a legacy history keeps the contract its journal was written with (conf/dispatch.env) */
    sim_write_plain(r->conf, r->legacy
                                 ? "DISPATCH_HASH_RING=ketama\nDISPATCH_VNODES=160\n"
                                   "DISPATCH_RING_HASH=sha1\nDISPATCH_CAPACITY_POLICY=report\n"
                                 : "DISPATCH_HASH_RING=ketama\nDISPATCH_VNODES=40\n"
                                   "DISPATCH_RING_HASH=sha1\nDISPATCH_CAPACITY_POLICY=report\n");
    sim_write_plain(r->shards, sim_memberships[0]);
    r->o = (struct gw_store_options){.state_dir = r->state,
                                     .segment_bytes = SEGMENT_BYTES,
                                     .checkpoint_interval_ms = CHECKPOINT_MS,
                                     .max_watchers = 4};
}

/* A legacy history's state dir: the journal alone, as that version left it. */
static void put_legacy(struct run *r)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "cp '%s' %s/journal.jsonl", r->legacy, r->state);
    if (system(cmd) != 0) {
        fprintf(stderr, "sim: cannot copy %s\n", r->legacy);
        exit(2);
    }
}

static void teardown(struct run *r)
{
    char cmd[256];
    for (size_t i = 0; i < r->nbatches; i++)
        gw_buf_free(&r->batches[i].receipt);
    free(r->batches);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", r->base);
    if (system(cmd) != 0)
        fprintf(stderr, "sim: cannot remove %s\n", r->base);
}

struct totals {
    uint64_t histories, ops, crashes, torn, faults, flips, lost_writes, calls, switches;
};

/* Runs one history; returns 0, or -1 with the failure in `why` (1024 bytes). */
static const char *legacy_journal; /* --legacy */

static int run_history(uint64_t seed, const struct op *ops, size_t n, char *why, struct totals *t)
{
    struct run r;
    memset(&r, 0, sizeof(r));
    r.seed = seed;
    r.batches = calloc(MAX_BATCHES, sizeof(*r.batches));
    r.legacy = legacy_journal && seed % 4 == 0 ? legacy_journal : NULL;
    setup(&r);
    if (r.legacy)
        put_legacy(&r);
    sim_sched_install(seed);
    sim_disk_install(r.state, r.archive, seed);
    int rc = sim_store_open(&r);
    if (rc == 0 && r.legacy)
        rc = sim_adopt_legacy(&r);
    if (rc == 0)
        rc = sim_check_all(&r);
    int trace = getenv("SIM_TRACE") != NULL;
    for (size_t i = 0; i < n && rc == 0 && !r.stop_history; i++, r.ops_run++) {
        if (trace)
            fprintf(stderr, "sim: op %zu: %c%u\n", i, ops[i].kind, ops[i].arg);
        /* each operation's choices from the seed and its own argument alone, so that a history
         * with operations taken out still makes the same choices in the rest */
        sim_sched_reseed(seed ^ ((uint64_t)ops[i].arg << 20) ^ (uint64_t)ops[i].kind);
        sim_disk_reseed(seed ^ ((uint64_t)ops[i].arg << 24) ^ (uint64_t)ops[i].kind);
        rc = sim_run_op(&r, &ops[i]);
    }
    if (rc == 0 && !r.stop_history)
        rc = sim_restart(&r);
    sim_store_close(&r);
    const struct sim_disk_counts *c = sim_disk_counts();
    if (t) {
        t->histories++;
        t->ops += r.ops_run;
        t->crashes += c->crashes;
        t->torn += c->torn;
        t->faults += c->faults;
        t->flips += c->flips;
        t->lost_writes += c->lost_writes;
        t->calls += c->calls;
        t->switches += sim_sched_switches();
    }
    sim_disk_uninstall();
    sim_sched_uninstall();
    snprintf(why, 1024, "%s", r.failure[0] ? r.failure : "stopped");
    teardown(&r);
    return r.failure[0] ? -1 : 0;
}

/* The history a seed makes: `n` operations, crashes and submits the most frequent. */
static void make_history(uint64_t seed, struct op *ops, size_t n, int flips)
{
    static const char weights[] = "nnnnnnnnnrrruummttscccccccfffaik";
    struct sim_rng rng;
    sim_rng_seed(&rng, seed * 0x9e3779b97f4a7c15ull + 1);
    for (size_t i = 0; i < n; i++) {
        ops[i].kind = weights[sim_rng_below(&rng, sizeof(weights) - 1)];
        ops[i].arg = (uint32_t)sim_rng_next(&rng);
    }
    if (flips && n && sim_rng_below(&rng, 2)) /* a flip weakens what may be read: last only */
        ops[n - 1].kind = OP_FLIP;
}

static void print_history(FILE *f, const struct op *ops, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%c%u", i ? "," : "", ops[i].kind, ops[i].arg);
}

static size_t parse_history(const char *text, struct op *ops, size_t max)
{
    size_t n = 0;
    while (*text && n < max) {
        ops[n].kind = *text++;
        ops[n].arg = (uint32_t)strtoul(text, (char **)&text, 10);
        n++;
        if (*text == ',')
            text++;
    }
    return n;
}

/* Removes operations while the history still fails: halves, then quarters, ..., then one by
 * one until no single removal keeps it failing (at most 1,500 replays). */
static size_t shrink(uint64_t seed, struct op *ops, size_t n, char *why)
{
    char now[1024];
    int replays = 0;
    for (size_t chunk = n / 2, was = 0; chunk >= 1; chunk = chunk > 1 ? chunk / 2 : 1) {
        if (chunk == 1 && was == n)
            break; /* a whole pass of single removals changed nothing */
        was = chunk == 1 ? n : 0;
        for (size_t at = 0; at + chunk <= n && replays < 1500; replays++) {
            struct op *tried = malloc(n * sizeof(*ops));
            memcpy(tried, ops, at * sizeof(*ops));
            memcpy(tried + at, ops + at + chunk, (n - at - chunk) * sizeof(*ops));
            if (run_history(seed, tried, n - chunk, now, NULL) != 0) {
                memcpy(ops, tried, (n - chunk) * sizeof(*ops));
                n -= chunk;
                snprintf(why, 1024, "%s", now);
            } else {
                at += chunk;
            }
            free(tried);
        }
        if (replays >= 1500)
            break;
    }
    return n;
}

int main(int argc, char **argv)
{
    uint64_t seed = 1, seeds = 1;
    size_t nops = 200;
    const char *history = NULL;
    int quiet = 0, flips = 1;
    uint64_t at_least = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seeds") && i + 1 < argc)
            seeds = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--ops") && i + 1 < argc)
            nops = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--history") && i + 1 < argc)
            history = argv[++i];
        else if (!strcmp(argv[i], "--quiet"))
            quiet = 1;
        else if (!strcmp(argv[i], "--no-flips"))
            flips = 0;
        else if (!strcmp(argv[i], "--legacy") && i + 1 < argc)
            legacy_journal = argv[++i];
        else if (!strcmp(argv[i], "--at-least") && i + 1 < argc)
            at_least = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: sim [--seed N] [--seeds N] [--ops N] [--history LIST] "
                            "[--no-flips] [--at-least N] [--legacy JOURNAL] [--quiet]\n");
            return 2;
        }
    }
#ifndef __SANITIZE_ADDRESS__ /* under the sanitizers, stderr carries their reports */
    if (!getenv("SIM_TRACE") && !freopen("/dev/null", "w", stderr))
        return 2;
#endif
    struct op *ops = calloc(history ? strlen(history) + 1 : nops, sizeof(*ops));
    struct totals t = {0};
    char why[1024];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int failures = 0;
    for (uint64_t s = seed; s < seed + (history ? 1 : seeds); s++) {
        size_t n = history ? parse_history(history, ops, strlen(history) + 1) : nops;
        if (!history)
            make_history(s, ops, n, flips);
        if (run_history(s, ops, n, why, &t) == 0)
            continue;
        failures++;
        printf("sim: seed %llu fails: %s\n", (unsigned long long)s, why);
        if (!history)
            n = shrink(s, ops, n, why);
        printf("sim: shrunk to %zu operations: %s\nsim: replay: tests/sim/sim --seed %llu "
               "--history '",
               n, why, (unsigned long long)s);
        print_history(stdout, ops, n);
        printf("'\n");
        break;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (!quiet || failures)
        printf("sim: %llu histories, %llu operations, %llu crash points, %llu torn writes, "
               "%llu faults, %llu bits flipped, %llu unsynced writes lost, %llu system calls, "
               "%llu thread switches, %.1f s\n",
               (unsigned long long)t.histories, (unsigned long long)t.ops,
               (unsigned long long)t.crashes, (unsigned long long)t.torn,
               (unsigned long long)t.faults, (unsigned long long)t.flips,
               (unsigned long long)t.lost_writes, (unsigned long long)t.calls,
               (unsigned long long)t.switches, secs);
    free(ops);
    if (!failures && t.crashes < at_least) {
        printf("sim: %llu crash points, fewer than the %llu asked for\n",
               (unsigned long long)t.crashes, (unsigned long long)at_least);
        return 1;
    }
    return failures ? 1 : 0;
}
