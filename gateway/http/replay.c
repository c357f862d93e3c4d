/* Startup replay of `shardgate serve`: every journaled receipt back into the idempotency table
 * and the totals, the torn tail logged, then the epoch (docs/operations.md §3). */
#include "request.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "exit.h"
#include "journal_ids.h"
#include "ledger_replay.h"
#include "log.h"
#include "membership.h"

/* Journal replay: each receipt record feeds the idempotency table and the totals. */
static int replay_receipt(void *ctx, const struct gw_journal_record *rec, struct gw_error *err)
{
    struct gw_server *s = ctx;
    json_t *id = rec->receipt ? json_object_get(rec->receipt, "batch_id") : NULL;
    if (rec->receipt &&
        (!json_is_string(id) ||
         !gw_name_valid(json_string_value(id), json_string_length(id), GW_BATCH_ID_MAX))) {
        gw_error_set(err, "", "receipt: needs a valid batch_id and a shards object");
        return -EINVAL;
    }
    int rc = gw_ledger_replay_record(&s->store.ledger, rec, err);
    if (rc != 0 || !rec->receipt)
        return rc;
    if (rec->seq <= s->store.index_durable_seq)
        return 0; /* the index files hold it already */
    struct gw_idem_ref ref = {rec->segment, rec->receipt_offset, rec->receipt_len, rec->seq};
    rc = gw_idem_insert(&s->store.idem, json_string_value(id), json_string_length(id),
                        rec->fingerprint, ref);
    if (rc == -EEXIST)
        gw_error_set(err, "", "receipt: batch_id \"%s\" was already journaled",
                     json_string_value(id));
    else if (rc != 0)
        gw_error_set(err, "", "%s", rc == -EIO ? GW_IDEM_BAD_BLOCK_MSG : "out of memory");
    return rc == -EEXIST ? -EINVAL : rc;
}

static void log_replay(const struct gw_server *s, const struct gw_journal_repair *rep,
                       int epoch_written)
{
    struct gw_buf f;
    if (rep->torn) {
        gw_buf_init(&f);
        gw_log_str(&f, "file", s->store.journal.path);
        gw_log_u64(&f, "line", rep->line);
        gw_log_u64(&f, "offset", rep->offset);
        gw_log_u64(&f, "bytes", rep->bytes);
        size_t n = strlen(s->store.journal.path) + sizeof(GW_JOURNAL_BROKEN_SUFFIX);
        char *moved_to = malloc(n);
        if (moved_to)
            snprintf(moved_to, n, "%s%s", s->store.journal.path, GW_JOURNAL_BROKEN_SUFFIX);
        gw_log_str(&f, "moved_to", moved_to ? moved_to : "?");
        free(moved_to);
        gw_log_event("journal_torn_tail_repaired", &f);
    }
    gw_buf_init(&f);
    gw_log_str(&f, "file", s->store.journal.path);
    gw_log_u64(&f, "receipts", s->store.journal.last_seq);
    gw_log_u64(&f, "bytes", s->store.journal.size);
    gw_log_bool(&f, "epoch_written", epoch_written);
    gw_log_event("journal_replayed", &f);
}

#define SKIPPED_LOGGED 8 /* the newest two are kept: more only after a crash mid-prune */

/* What the start decided about checkpoints, logged once the replay succeeded (a refused start
 * prints its one error line only). */
struct start_log {
    uint64_t skipped[SKIPPED_LOGGED];
    char reason[SKIPPED_LOGGED][sizeof(((struct gw_error *)0)->msg)];
    size_t nskipped;
    long listed;
    struct gw_checkpoint used; /* last_seq 0: none */
};

static void log_skipped(const struct gw_server *s, uint64_t seq, const char *reason)
{
    char name[GW_CHECKPOINT_NAME_MAX], path[4096];
    struct gw_buf f;
    gw_checkpoint_name(name, seq);
    snprintf(path, sizeof(path), "%s/%s", s->store.journal.dir, name);
    gw_buf_init(&f);
    gw_log_str(&f, "file", path);
    gw_log_str(&f, "reason", reason);
    gw_log_event("checkpoint_skipped", &f);
}

/* Why each checkpoint was passed over: logged before a refused start too, whose cause it may be
 * (docs/journal.md §7). */
static void log_skips(const struct gw_server *s, const struct start_log *l)
{
    for (size_t i = 0; i < l->nskipped; i++)
        log_skipped(s, l->skipped[i], l->reason[i]);
}

static void log_start(const struct gw_server *s, const struct start_log *l)
{
    char name[GW_CHECKPOINT_NAME_MAX], path[4096];
    struct gw_buf f;
    gw_buf_init(&f);
    if (l->used.last_seq > 0) {
        gw_checkpoint_name(name, l->used.last_seq);
        snprintf(path, sizeof(path), "%s/%s", s->store.journal.dir, name);
        gw_log_str(&f, "file", path);
        gw_log_u64(&f, "last_seq", l->used.last_seq);
        gw_log_u64(&f, "segment", l->used.segment);
        gw_log_u64(&f, "offset", l->used.offset);
        gw_log_event("checkpoint_used", &f);
        return;
    }
    gw_log_str(&f, "reason", l->listed > 0 ? "no usable checkpoint" : "no checkpoint");
    gw_log_event("journal_full_replay", &f);
}

/* Starts from the newest checkpoint that checks out (docs/journal.md §7): its chain and totals
 * in place, the ids it covers back in the index. Returns 1 (and *from), 0 (none: a full
 * replay), or a negative code with err set. */
static void note_skipped(struct start_log *log, uint64_t seq, const char *reason)
{
    if (log->nskipped == SKIPPED_LOGGED)
        return;
    log->skipped[log->nskipped] = seq;
    snprintf(log->reason[log->nskipped++], sizeof(log->reason[0]), "%s", reason);
}

/* Puts one loaded checkpoint in place. Returns 1, 0 when its values do not apply (the chain and
 * ledger emptied again: the next older one is tried), or a negative code. */
static int apply_checkpoint(struct gw_server *s, const struct gw_checkpoint *c,
                            struct start_log *log, struct gw_error *err)
{
    struct gw_error why;
    int rc = gw_checkpoint_apply(c, &s->store.journal, &s->store.ledger, &why);
    if (rc == -EINVAL) {
        note_skipped(log, c->last_seq, why.msg);
        gw_chain_free(&s->store.journal.chain);
        gw_chain_init(&s->store.journal.chain);
        gw_ledger_free(&s->store.ledger);
        gw_ledger_init(&s->store.ledger);
        s->store.journal.last_seq = 0;
        return 0;
    }
    if (rc != 0) {
        *err = why;
        return rc;
    }
    rc = gw_journal_scan_ids(&s->store.journal, &s->store.idem, s->store.index_durable_seq,
                             c->segment, c->offset, err);
    if (rc != 0)
        return rc;
    s->store.checkpoint_seq = c->last_seq;
    log->used.last_seq = c->last_seq;
    log->used.segment = c->segment;
    log->used.offset = c->offset;
    return 1;
}

static int use_checkpoint(struct gw_server *s, struct gw_journal_resume *from,
                          struct start_log *log, struct gw_error *err)
{
    uint64_t *seqs = NULL;
    long n = gw_checkpoint_list(s->store.journal.dir, &seqs);
    int rc = 0;
    log->listed = n;
    for (long i = 0; i < n && rc == 0; i++) {
        struct gw_checkpoint c;
        struct gw_error why;
        if (gw_checkpoint_load(s->store.journal.dir, seqs[i], &s->store.journal, &c, &why) != 0) {
            note_skipped(log, seqs[i], why.msg);
            continue;
        }
        rc = apply_checkpoint(s, &c, log, err);
        if (rc == 1)
            *from = (struct gw_journal_resume){c.segment, c.resume_offset, c.last_seq};
        gw_checkpoint_free(&c);
    }
    free(seqs);
    return rc;
}

/* Opens, replays and repairs the journal, then writes the epoch if it changed. */
/* Opens the idempotency index of the state dir with the --idempotency-window. */
static int open_index(struct gw_server *s, struct gw_error *err)
{
    struct gw_idem_options io = {.window_ms = s->opt.idempotency_window_ms};
    int rc = gw_idem_open(&s->store.idem, s->opt.state_dir, &io, &s->store.index_durable_seq, err);
    s->store.idem_open = rc == 0;
    return rc;
}

int gw_server_open_journal(struct gw_server *s, const struct gw_topology *topo)
{
    struct gw_error err;
    struct gw_journal_repair rep = {0};
    struct gw_journal_resume from;
    struct start_log log = {0};
    int rc = gw_journal_prepare(&s->store.journal, s->opt.state_dir, s->opt.segment_bytes, 0, &err);
    if (rc == 0) /* inside the state dir's lock: one server's index at a time */
        rc = open_index(s, &err);
    int resumed = rc == 0 ? use_checkpoint(s, &from, &log, &err) : 0;
    if (rc == 0)
        rc = resumed < 0 ? resumed : 0;
    if (rc == 0)
        rc = gw_journal_replay(&s->store.journal, resumed ? &from : NULL, replay_receipt, s, &rep,
                               &err);
    log_skips(s, &log);
    if (rc == -EINVAL) {
        fprintf(stderr, "%s\n", err.msg);
        return GW_EXIT_UNUSABLE;
    }
    int written = 0;
    if (rc == 0)
        rc = gw_journal_seal_unchecked(&s->store.journal, &err);
    if (rc == 0)
        rc = gw_journal_write_epoch(&s->store.journal, topo, &written, &err);
    if (rc != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return GW_EXIT_INTERNAL;
    }
    log_start(s, &log);
    log_replay(s, &rep, written);
    return GW_EXIT_OK;
}
