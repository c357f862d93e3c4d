/* `shardgate journal verify` (docs/journal.md §8): every record of every segment under the
 * replay's rules, every seal hashed, every checkpoint read back and resumed from; nothing is
 * changed. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive.h"
#include "checkpoint.h"
#include "cli.h"
#include "options.h"
#include "idempotency.h"
#include "journal.h"
#include "journal_ids.h"
#include "ledger_replay.h"

const char gw_usage_journal[] =
    "usage: shardgate journal verify --state-dir DIR\n"
    "       shardgate journal archive --state-dir DIR --dir ARCHIVE_DIR [--plain]\n"
    "archive moves the sealed segments the newest valid checkpoint covers to ARCHIVE_DIR, zstd\n"
    "(or plain with --plain), listed in DIR/archive.jsonl (docs/journal.md §8); a re-run\n"
    "completes an interrupted one.\n"
    "Verifies the journal of a state dir (docs/journal.md §8): every record of every segment\n"
    "under the replay's rules, the header links, the sha256 of every sealed segment, and every\n"
    "checkpoint. Changes nothing; refused while a server holds the state dir.\n"
    "exit: 0 verified, 3 a fault (printed as `file:line: what`), 64 usage,\n"
    "      1 internal error (the state dir in use, out of memory).\n";

/* What verify's replay builds: the index (every batch id once, the replay's rule) and the
 * ledger with its per-epoch totals, as a start builds them. */
struct verify_state {
    struct gw_idem *ids;
    struct gw_ledger *ledger;
};

static int visit(void *ctx, const struct gw_journal_record *rec, struct gw_error *err)
{
    struct verify_state *v = ctx;
    int rc = v->ledger ? gw_ledger_replay_record(v->ledger, rec, err) : 0;
    if (rc != 0 || !rec->receipt || !v->ids)
        return rc;
    json_t *id = json_object_get(rec->receipt, "batch_id");
    if (!json_is_string(id)) {
        gw_error_set(err, "", "receipt: needs a valid batch_id");
        return -EINVAL;
    }
    struct gw_idem_ref ref = {.segment = rec->segment,
                              .offset = rec->receipt_offset,
                              .len = rec->receipt_len,
                              .seq = rec->seq};
    rc = gw_idem_insert(v->ids, json_string_value(id), json_string_length(id), rec->fingerprint,
                        ref);
    if (rc == -EEXIST)
        gw_error_set(err, "", "receipt: batch_id \"%s\" was already journaled",
                     json_string_value(id));
    return rc == -EEXIST ? -EINVAL : rc;
}

/* The chain, ledger and per-epoch totals as a checkpoint spells them (0 or -ENOMEM). */
static int sums_of(struct gw_journal *j, struct gw_ledger *l, struct gw_buf *out)
{
    struct gw_checkpoint_snapshot snap;
    int rc = gw_checkpoint_take(j, l, &snap);
    gw_buf_init(out);
    gw_buf_append(out, snap.body.data, snap.body.len);
    gw_checkpoint_snapshot_free(&snap);
    return rc != 0 || out->failed ? -ENOMEM : 0;
}

/* A start from checkpoint c must reach the full replay's sums (docs/journal.md §8): its epochs,
 * ledger and totals, with the records after it replayed, are compared byte for byte with
 * `full`. The journal's chain is c's afterwards. Returns 0, -EINVAL (why set) or -ENOMEM. */
static int verify_resume(struct gw_journal *j, const struct gw_checkpoint *c,
                         const struct gw_buf *full, struct gw_error *why)
{
    struct gw_ledger l;
    struct gw_buf got = {0};
    struct gw_journal_repair rep;
    struct verify_state v = {NULL, &l};
    if (gw_ledger_init(&l) != 0)
        return -ENOMEM;
    gw_chain_free(&j->chain);
    gw_chain_init(&j->chain);
    gw_buf_reset(&j->epoch_line); /* as a start has it: the epoch line comes from the replay */
    int rc = gw_checkpoint_apply(c, j, &l, why);
    struct gw_journal_resume from = {c->segment, c->resume_offset, c->last_seq};
    rc = rc ? rc : gw_journal_replay(j, &from, visit, &v, &rep, why);
    rc = rc ? rc : sums_of(j, &l, &got);
    size_t at = 0;
    while (rc == 0 && at < got.len && at < full->len && got.data[at] == full->data[at])
        at++;
    if (rc == 0 && (at < got.len || at < full->len)) {
        size_t from_at = at > 24 ? at - 24 : 0;
        gw_error_set(why, "",
                     "a start from it does not reach the full replay's epochs, ledger and "
                     "totals (at byte %zu of them: ...%.*s... != ...%.*s...)",
                     at, (int)(got.len - from_at < 48 ? got.len - from_at : 48), got.data + from_at,
                     (int)(full->len - from_at < 48 ? full->len - from_at : 48),
                     full->data + from_at);
        rc = -EINVAL;
    }
    gw_buf_free(&got);
    gw_ledger_free(&l);
    return rc;
}

/* Every checkpoint file reads back, sits where it says and, resumed from, gives the full
 * replay's sums `full`; one inside an archived segment is passed by (*count: the others).
 * Returns 0 or -EINVAL (printed), -ENOMEM. */
static int verify_checkpoints(struct gw_journal *j, const struct gw_buf *full, long *count)
{
    uint64_t *seqs = NULL;
    long n = gw_checkpoint_list(j->dir, &seqs), stale = 0;
    int rc = n < 0 ? (int)n : 0;
    for (long i = 0; i < n && rc == 0; i++) {
        struct gw_checkpoint c;
        struct gw_error why;
        char name[GW_CHECKPOINT_NAME_MAX];
        rc = gw_checkpoint_load(j->dir, seqs[i], j, &c, &why);
        if (rc == 0 && j->segs.narchived && /* ends at an archived segment the archive passed */
            j->segs.archived[j->segs.narchived - 1].last_seq > c.last_seq) {
            gw_checkpoint_free(&c);
            rc = -ESTALE;
        }
        if (rc == -ESTALE) { /* older than the archive: a start never resumes from it */
            rc = 0;
            stale++;
            continue;
        }
        if (rc == 0) {
            rc = verify_resume(j, &c, full, &why);
            gw_checkpoint_free(&c);
        }
        if (rc == 0 || rc == -ENOMEM)
            continue;
        gw_checkpoint_name(name, seqs[i]);
        fprintf(stderr, "checkpoint: %s/%s: %s\n", j->dir, name, why.msg);
        rc = -EINVAL;
    }
    *count = n - stale;
    free(seqs);
    return rc;
}

/* With archived segments (docs/journal.md §8) the replay starts where a start would: from the
 * newest checkpoint that loads, its chain and ledger in place and the ids of the present records
 * it covers in the index. *base: its last_seq, or -1 when there is none (then the replay names
 * the first archived segment nothing covers). */
static int replay_from_base(struct gw_journal *j, struct verify_state *v, long long *base,
                            struct gw_error *err)
{
    struct gw_journal_repair rep;
    struct gw_journal_resume from;
    uint64_t *seqs = NULL;
    long n = j->segs.narchived ? gw_checkpoint_list(j->dir, &seqs) : 0;
    int rc = n < 0 ? (int)n : 0;
    *base = -1;
    for (long i = 0; rc == 0 && i < n && *base < 0; i++) {
        struct gw_checkpoint c;
        struct gw_error why;
        if (gw_checkpoint_load(j->dir, seqs[i], j, &c, &why) != 0)
            continue;
        rc = gw_checkpoint_apply(&c, j, v->ledger, &why);
        if (rc == -EINVAL) { /* values that do not apply: the next older one, as a start */
            gw_chain_free(&j->chain);
            gw_chain_init(&j->chain);
            gw_ledger_free(v->ledger);
            rc = gw_ledger_init(v->ledger);
            j->last_seq = 0;
        } else if (rc == 0) {
            /* the archived ids from their ids files, the present ones from the segments */
            rc = gw_journal_scan_ids(j, v->ids, 0, c.segment, c.offset, err);
            *base = (long long)c.last_seq;
            from = (struct gw_journal_resume){c.segment, c.resume_offset, c.last_seq};
        }
        gw_checkpoint_free(&c);
    }
    free(seqs);
    return rc ? rc : gw_journal_replay(j, *base >= 0 ? &from : NULL, visit, v, &rep, err);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* The duplicate-id check needs an index; verify changes nothing in the state dir, so it keeps
 * one in a scratch dir of its own, removed afterwards. */
static int open_scratch_index(struct gw_idem *ids, char *scratch, size_t n, struct gw_error *err)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(scratch, n, "%s/shardgate-verify-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(scratch)) {
        gw_error_set(err, "", "journal verify: cannot create %s: %s", scratch, strerror(errno));
        return -errno;
    }
    uint64_t durable = 0;
    struct gw_idem_options o = {0};
    int rc = gw_idem_open(ids, scratch, &o, &durable, err);
    if (rc != 0)
        nftw(scratch, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    return rc;
}

/* The lines written before checksums (docs/journal.md §2.1): in sealed segments, under their
 * seal's sha256; in the active segment, under nothing until the next start seals it. */
static void print_unchecked(const struct gw_journal *j)
{
    size_t sealed = 0;
    for (size_t i = 0; i < j->segs.count; i++)
        sealed += !j->segs.sealed[i].checked;
    if (sealed)
        printf("; %zu sealed segments without line checksums (each under its seal's sha256)",
               sealed);
    if (!j->active_checked && j->size > 0)
        printf("; %s: lines without checksums, unprotected until a start seals it",
               GW_JOURNAL_FILE);
}

static void print_ok(const struct gw_journal *j, long checkpoints, long long base)
{
    printf("journal: OK: %zu sealed segments, %llu receipts, %ld checkpoints", j->segs.count,
           (unsigned long long)j->last_seq, checkpoints);
    if (base >= 0) {
        char name[GW_CHECKPOINT_NAME_MAX];
        gw_checkpoint_name(name, (uint64_t)base);
        printf("; %zu archived segments not read (from %s on)", j->segs.narchived, name);
    }
    print_unchecked(j);
    printf("\n");
}

/* Every check of `journal verify`; prints its summary line when `say_ok`. Returns the exit code,
 * the fault on stderr. */
static int verify(const char *dir, int say_ok)
{
    struct gw_journal j;
    struct gw_error err;
    struct gw_idem ids;
    char scratch[4096];
    struct gw_ledger ledger;
    struct gw_buf full = {0};
    struct verify_state v = {&ids, &ledger};
    if (gw_ledger_init(&ledger) != 0) {
        fprintf(stderr, "shardgate: out of memory\n");
        return GW_EXIT_INTERNAL;
    }
    if (open_scratch_index(&ids, scratch, sizeof(scratch), &err) != 0) {
        fprintf(stderr, "shardgate: %s\n", err.msg);
        gw_ledger_free(&ledger);
        return GW_EXIT_INTERNAL;
    }
    long long base = -1;
    int rc = gw_journal_prepare(&j, dir, GW_SEGMENT_BYTES_DEFAULT, GW_JOURNAL_VERIFY, &err);
    if (rc == 0)
        rc = replay_from_base(&j, &v, &base, &err);
    if (rc != 0)
        fprintf(stderr, "%s\n", err.msg);
    if (rc == 0)
        rc = sums_of(&j, &ledger, &full);
    long checkpoints = 0;
    if (rc == 0 && (rc = verify_checkpoints(&j, &full, &checkpoints)) == 0 && say_ok)
        print_ok(&j, checkpoints, base);
    if (rc != -EBUSY && rc != -EINVAL && rc != 0)
        rc = -ENOMEM;
    if (j.path)
        gw_journal_close(&j);
    gw_buf_free(&full);
    gw_ledger_free(&ledger);
    gw_idem_close(&ids);
    nftw(scratch, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    return gw_exit_of_open(rc);
}

/* The state dir verified first, as `journal verify` does (docs/journal.md §8), once the ids
 * files of segments archived before are in place: a segment that fails is refused with
 * verify's message, and nothing more is written or removed. */
static int archive(const char *dir, const char *adir, int plain)
{
    struct gw_archive_result r;
    struct gw_error err;
    int rc = gw_journal_archive_ids(dir, adir, &err);
    int checked = rc == 0 ? verify(dir, 0) : GW_EXIT_OK;
    if (checked != GW_EXIT_OK)
        return checked;
    if (rc == 0)
        rc = gw_journal_archive(dir, adir, plain, &r, &err);
    if (rc != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return gw_exit_of_open(rc);
    }
    printf("journal: archived %zu segments (%zu completed from an earlier run) through seq %llu\n",
           r.archived, r.completed, r.through_seq);
    return GW_EXIT_OK;
}

struct journal_args {
    const char *dir, *adir;
    int plain;
};

/* Returns -1 when parsed, else the exit code (help, usage). */
static int parse_args(int argc, char **argv, int is_archive, struct journal_args *a)
{
    static const struct option opts[] = {{"state-dir", required_argument, 0, 's'},
                                         {"dir", required_argument, 0, 'd'},
                                         {"plain", no_argument, 0, 'p'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c, index = 0;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc - 1, argv + 1, "+", opts, &index)) != -1) {
        if (c == 'h') {
            fputs(gw_usage_journal, stdout);
            return GW_EXIT_OK;
        }
        if (c == 's')
            a->dir = optarg;
        else if (is_archive && c == 'd')
            a->adir = optarg;
        else if (is_archive && c == 'p')
            a->plain = 1;
        else {
            char msg[200];
            if (c == '?')
                gw_cli_bad_option(opts, argv + 1, msg, sizeof(msg));
            else
                snprintf(msg, sizeof(msg), "--%s is an option of `shardgate journal archive`",
                         opts[index].name);
            fprintf(stderr, "shardgate: %s\n%s", msg, gw_usage_journal);
            return GW_EXIT_USAGE;
        }
    }
    if (!a->dir || optind < argc - 1 || (is_archive && !a->adir)) {
        fprintf(stderr, "shardgate: %s is required\n%s",
                a->dir ? "--dir ARCHIVE_DIR" : "--state-dir DIR", gw_usage_journal);
        return GW_EXIT_USAGE;
    }
    return -1;
}

int gw_cmd_journal(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--help") == 0) {
        fputs(gw_usage_journal, stdout);
        return GW_EXIT_OK;
    }
    int is_archive = argc >= 2 && strcmp(argv[1], "archive") == 0;
    if (argc < 2 || (!is_archive && strcmp(argv[1], "verify") != 0)) {
        fprintf(stderr, "shardgate: journal: the command is verify or archive\n%s",
                gw_usage_journal);
        return GW_EXIT_USAGE;
    }
    struct journal_args a = {0};
    int rc = parse_args(argc, argv, is_archive, &a);
    if (rc >= 0)
        return rc;
    return is_archive ? archive(a.dir, a.adir, a.plain) : verify(a.dir, 1);
}
