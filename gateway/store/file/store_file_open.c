/* The state dir's store at start (docs/operations.md §3): every journaled receipt back into the
 * idempotency table and the totals, from the newest checkpoint that checks out, the torn tail
 * logged, the epoch journaled; then its threads: the feed, the scrub, the checkpointer and the
 * journal writer. */
#include "store.h"
#include "store_ops.h"
#include "store_file.h"
#include "store_state.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "fileio.h"
#include "io.h"
#include "journal_ids.h"
#include "ledger_replay.h"
#include "log.h"
#include "membership.h"

/* Journal replay: each receipt record feeds the idempotency table and the totals. */
static int replay_receipt(void *ctx, const struct gw_journal_record *rec, struct gw_error *err)
{
    struct gw_store *s = ctx;
    struct gw_store_file *f = gw_fs(s);
    json_t *id = rec->receipt ? json_object_get(rec->receipt, "batch_id") : NULL;
    if (rec->receipt &&
        (!json_is_string(id) ||
         !gw_name_valid(json_string_value(id), json_string_length(id), GW_BATCH_ID_MAX))) {
        gw_error_set(err, "", "receipt: needs a valid batch_id and a shards object");
        return -EINVAL;
    }
    int rc = gw_ledger_replay_record(&s->ledger, rec, err);
    if (rc != 0 || !rec->receipt)
        return rc;
    if (rec->seq <= f->index_durable_seq)
        return 0; /* the index files hold it already */
    struct gw_idem_ref ref = {.segment = rec->segment,
                              .offset = rec->receipt_offset,
                              .len = rec->receipt_len,
                              .seq = rec->seq};
    rc = gw_idem_insert(&f->idem, json_string_value(id), json_string_length(id), rec->fingerprint,
                        ref);
    if (rc == -EEXIST)
        gw_error_set(err, "", "receipt: batch_id \"%s\" was already journaled",
                     json_string_value(id));
    else if (rc != 0)
        gw_error_set(err, "", "%s", rc == -EIO ? GW_IDEM_BAD_BLOCK_MSG : "out of memory");
    return rc == -EEXIST ? -EINVAL : rc;
}

static void log_replay(const struct gw_store *s, const struct gw_journal_repair *rep,
                       int epoch_written)
{
    struct gw_store_file *fs = gw_fs(s);
    struct gw_buf f;
    if (rep->torn) {
        gw_buf_init(&f);
        gw_log_str(&f, "file", fs->journal.path);
        gw_log_u64(&f, "line", rep->line);
        gw_log_u64(&f, "offset", rep->offset);
        gw_log_u64(&f, "bytes", rep->bytes);
        size_t n = strlen(fs->journal.path) + sizeof(GW_JOURNAL_BROKEN_SUFFIX);
        char *moved_to = malloc(n);
        if (moved_to)
            snprintf(moved_to, n, "%s%s", fs->journal.path, GW_JOURNAL_BROKEN_SUFFIX);
        gw_log_str(&f, "moved_to", moved_to ? moved_to : "?");
        free(moved_to);
        gw_log_event("journal_torn_tail_repaired", &f);
    }
    gw_buf_init(&f);
    gw_log_str(&f, "file", fs->journal.path);
    gw_log_u64(&f, "receipts", fs->journal.last_seq);
    gw_log_u64(&f, "bytes", fs->journal.size);
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

static void log_skipped(const struct gw_store *s, uint64_t seq, const char *reason)
{
    char name[GW_CHECKPOINT_NAME_MAX], path[4096];
    struct gw_buf f;
    gw_checkpoint_name(name, seq);
    snprintf(path, sizeof(path), "%s/%s", gw_fs(s)->journal.dir, name);
    gw_buf_init(&f);
    gw_log_str(&f, "file", path);
    gw_log_str(&f, "reason", reason);
    gw_log_event("checkpoint_skipped", &f);
}

/* Why each checkpoint was passed over: logged before a refused start too, whose cause it may be
 * (docs/journal.md §7). */
static void log_skips(const struct gw_store *s, const struct start_log *l)
{
    for (size_t i = 0; i < l->nskipped; i++)
        log_skipped(s, l->skipped[i], l->reason[i]);
}

static void log_start(const struct gw_store *s, const struct start_log *l)
{
    char name[GW_CHECKPOINT_NAME_MAX], path[4096];
    struct gw_buf f;
    gw_buf_init(&f);
    if (l->used.last_seq > 0) {
        gw_checkpoint_name(name, l->used.last_seq);
        snprintf(path, sizeof(path), "%s/%s", gw_fs(s)->journal.dir, name);
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
static int apply_checkpoint(struct gw_store *s, const struct gw_checkpoint *c,
                            struct start_log *log, struct gw_error *err)
{
    struct gw_store_file *f = gw_fs(s);
    struct gw_error why;
    int rc = gw_checkpoint_apply(c, &f->journal, &s->ledger, &why);
    if (rc == -EINVAL) {
        note_skipped(log, c->last_seq, why.msg);
        gw_chain_free(&f->journal.chain);
        gw_chain_init(&f->journal.chain);
        gw_ledger_free(&s->ledger);
        gw_ledger_init(&s->ledger);
        f->journal.last_seq = 0;
        return 0;
    }
    if (rc != 0) {
        *err = why;
        return rc;
    }
    rc = gw_journal_scan_ids(&f->journal, &f->idem, f->index_durable_seq, c->segment, c->offset,
                             err);
    if (rc != 0)
        return rc;
    f->checkpoint_seq = c->last_seq;
    log->used.last_seq = c->last_seq;
    log->used.segment = c->segment;
    log->used.offset = c->offset;
    return 1;
}

static int use_checkpoint(struct gw_store *s, struct gw_journal_resume *from, struct start_log *log,
                          struct gw_error *err)
{
    struct gw_store_file *f = gw_fs(s);
    uint64_t *seqs = NULL;
    long n = gw_checkpoint_list(f->journal.dir, &seqs);
    int rc = 0;
    log->listed = n;
    for (long i = 0; i < n && rc == 0; i++) {
        struct gw_checkpoint c;
        struct gw_error why;
        if (gw_checkpoint_load(f->journal.dir, seqs[i], &f->journal, &c, &why) != 0) {
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

/* Opens the idempotency index of the state dir with the --idempotency-window. */
static int open_index(struct gw_store *s, const struct gw_store_options *o, struct gw_error *err)
{
    struct gw_store_file *f = gw_fs(s);
    struct gw_idem_options io = {.window_ms = o->idempotency_window_ms};
    int rc = gw_idem_open(&f->idem, o->state_dir, &io, &f->index_durable_seq, err);
    f->idem_open = rc == 0;
    return rc;
}

/* The index holds receipts past the journal's end (a journal cut by a repair, restored from a
 * backup, or that lost its tail; by its durable_seq, or by its top_seq when a memtable flushed
 * on its own before a crash): what it says of them is not the journal's, so it is emptied and
 * the start runs again on the journal alone, as after `rm -rf index/` (docs/journal.md §9). */
static void drop_index_ahead(struct gw_store *s, const struct gw_store_options *o)
{
    struct gw_store_file *fs = gw_fs(s);
    struct gw_buf f;
    gw_buf_init(&f);
    gw_log_str(&f, "dir", fs->journal.dir);
    gw_log_u64(&f, "index_seq", fs->index_durable_seq);
    gw_log_u64(&f, "index_top_seq", gw_idem_top_seq(&fs->idem));
    gw_log_u64(&f, "journal_seq", fs->journal.last_seq);
    gw_log_event("index_ahead_of_journal", &f);
    gw_idem_close(&fs->idem);
    fs->idem_open = 0;
    gw_idem_discard(o->state_dir); /* while the journal holds the state dir's lock */
    gw_journal_close(&fs->journal);
    gw_ledger_free(&s->ledger);
    gw_ledger_init(&s->ledger);
    fs->index_durable_seq = fs->checkpoint_seq = 0;
}

/* Checkpoints past the journal's end (it was cut or restored after they were written): the start
 * passed them by, as their position does not check out; they are removed, so that none stays as
 * the "newest" over the ones written from now on (docs/journal.md §7). */
static void drop_checkpoints_ahead(struct gw_store *s)
{
    struct gw_store_file *fs = gw_fs(s);
    char name[GW_CHECKPOINT_NAME_MAX], path[4096];
    uint64_t *seqs = NULL;
    long n = gw_checkpoint_list(fs->journal.dir, &seqs);
    int dropped = 0;
    for (long i = 0; i < n && seqs[i] > fs->journal.last_seq; i++) {
        gw_checkpoint_name(name, seqs[i]);
        snprintf(path, sizeof(path), "%s/%s", fs->journal.dir, name);
        if (gw_io.unlink(path) != 0)
            continue;
        dropped = 1;
        struct gw_buf f;
        gw_buf_init(&f);
        gw_log_str(&f, "file", path);
        gw_log_u64(&f, "journal_seq", fs->journal.last_seq);
        gw_log_event("checkpoint_removed", &f);
    }
    if (dropped)
        gw_sync_dir(fs->journal.dir);
    free(seqs);
}

/* The journal and the index read back (every receipt in the index and the totals). Returns 0, 1
 * when the index is ahead of the journal, or a negative code with err set. */
static int replay_state(struct gw_store *s, const struct gw_store_options *o,
                        struct gw_journal_repair *rep, struct start_log *log, struct gw_error *err)
{
    struct gw_store_file *f = gw_fs(s);
    struct gw_journal_resume from;
    int rc = gw_journal_prepare(&f->journal, o->state_dir, o->segment_bytes, 0, err);
    if (rc == 0) /* inside the state dir's lock: one server's index at a time */
        rc = open_index(s, o, err);
    int resumed = rc == 0 ? use_checkpoint(s, &from, log, err) : 0;
    if (rc == 0)
        rc = resumed < 0 ? resumed : 0;
    if (rc == 0)
        rc = gw_journal_replay(&f->journal, resumed ? &from : NULL, replay_receipt, s, rep, err);
    if (rc == 0 && (f->index_durable_seq > f->journal.last_seq ||
                    gw_idem_top_seq(&f->idem) > f->journal.last_seq))
        return 1;
    return rc;
}

/* What the replay read is what the start stands on: made durable before a commit joins it, as
 * the run before may have put it in place without syncing it (a rotation whose directory sync
 * failed leaves the new segment's name in the page cache only; docs/journal.md §5). */
static int sync_what_was_read(struct gw_store_file *f, struct gw_error *err)
{
    int rc = gw_io.fdatasync(f->journal.fd) == 0 ? 0 : -errno;
    if (rc == 0)
        rc = gw_sync_dir(f->journal.dir);
    if (rc != 0)
        gw_error_set(err, "", "journal: %s: cannot sync what the start read: %s", f->journal.dir,
                     strerror(-rc));
    return rc;
}

int gw_store_open_file(struct gw_store *s, const struct gw_store_options *o,
                       const struct gw_topology *topo, struct gw_error *err)
{
    struct gw_store_file *f = calloc(1, sizeof(*f));
    if (!f) {
        gw_error_set(err, "", "out of memory");
        return -ENOMEM;
    }
    f->journal.fd = -1;
    s->impl = f; /* closed by close_file whatever the open's outcome */
    struct gw_journal_repair rep = {0}, again = {0};
    struct start_log log = {0};
    int rc = replay_state(s, o, &rep, &log, err);
    if (rc == 1) {
        drop_index_ahead(s, o);
        memset(&log, 0, sizeof(log));
        rc = replay_state(s, o, &again, &log, err);
        rc = rc == 1 ? -EIO : rc; /* an empty index is never ahead */
    }
    log_skips(s, &log);
    if (rc == -EINVAL)
        return rc;
    if (rc == 0)
        drop_checkpoints_ahead(s);
    int written = 0;
    if (rc == 0)
        rc = gw_journal_seal_unchecked(&f->journal, err);
    if (rc == 0)
        rc = gw_journal_write_epoch(&f->journal, topo, &written, err);
    if (rc == 0)
        rc = sync_what_was_read(f, err);
    if (rc != 0)
        return rc == -EINVAL ? -EIO : rc;
    log_start(s, &log);
    log_replay(s, &rep, written);
    return 0;
}

/* The journal writer's hook: the feed's bound first, then the watchers it wakes. */
static void announce_durable(void *ctx, uint64_t last_seq, uint64_t shard_bits)
{
    struct gw_store *s = ctx;
    struct gw_store_file *f = gw_fs(s);
    gw_feed_active_segment(&f->feed, atomic_load(&f->journal.segment), f->journal.size);
    gw_scrub_durable(&f->scrub, atomic_load(&f->journal.segment), f->journal.size);
    gw_feed_durable(&f->feed, last_seq);
    gw_feed_watch_durable(&s->watch, last_seq, shard_bits);
}

/* The feed reads the state dir's segments; what replay found is durable. */
static int start_feed(struct gw_store *s, const struct gw_store_options *o)
{
    struct gw_store_file *f = gw_fs(s);
    int rc = gw_feed_init(&f->feed, o->state_dir);
    if (rc == 0) {
        gw_feed_active_segment(&f->feed, atomic_load(&f->journal.segment), f->journal.size);
        gw_feed_checked_from(&f->feed, f->journal.checked_from);
        gw_feed_durable(&f->feed, f->journal.last_seq);
        rc = gw_feed_watch_start(&s->watch, f->journal.last_seq, o->max_watchers);
    }
    return rc;
}

int gw_store_start_file(struct gw_store *s, const struct gw_store_options *o,
                        struct gw_metrics *metrics, struct gw_error *err)
{
    struct gw_store_file *f = gw_fs(s);
    if (start_feed(s, o) != 0 || gw_scrub_start(&f->scrub, o->state_dir, o->scrub_rate,
                                                f->journal.checked_from, metrics) != 0) {
        gw_error_set(err, "", "shardgate: cannot start the feed or the scrub");
        return -ENOMEM;
    }
    gw_scrub_durable(&f->scrub, atomic_load(&f->journal.segment), f->journal.size);
    struct gw_commit_hook hook = {announce_durable, s};
    /* Taken through the older of the checkpoint and the index's durable mark: an index the start
     * rebuilt is made durable by the next checkpoint, a clean stop's included, so that a cut of
     * the journal after the stop finds it ahead (docs/journal.md §9). */
    uint64_t taken =
        f->checkpoint_seq < f->index_durable_seq ? f->checkpoint_seq : f->index_durable_seq;
    int rc = gw_checkpointer_start(&f->checkpointer, &f->journal, &s->ledger, &f->idem,
                                   o->checkpoint_interval_ms, taken, err);
    if (rc == 0)
        rc = gw_committer_start(&f->committer, &f->journal, metrics, &f->checkpointer,
                                o->commit_delay_ms, &hook, err);
    return rc;
}
