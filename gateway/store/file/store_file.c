/* The face of the state dir's store (docs/journal.md): every call of store.h on the journal,
 * the idempotency index, the ledger and the feed's reader. */
#include "store.h"
#include "store_ops.h"
#include "store_file.h"
#include "store_state.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "epoch_read.h"
#include "line_check.h"

static void stop_file(struct gw_store *s)
{
    struct gw_store_file *f = gw_fs(s);
    if (!f)
        return;                             /* its open could not make it */
    gw_committer_stop(&f->committer);       /* offers the last checkpoint, after the last group */
    gw_checkpointer_stop(&f->checkpointer); /* writes it */
    gw_scrub_stop(&f->scrub);
}

static void close_file(struct gw_store *s)
{
    struct gw_store_file *f = gw_fs(s);
    if (!f)
        return;
    gw_committer_destroy(&f->committer);
    gw_feed_free(&f->feed);
    if (f->journal.path)
        gw_journal_close(&f->journal);
    if (f->idem_open)
        gw_idem_close(&f->idem);
    free(f);
    s->impl = NULL;
}

static int writable_file(struct gw_store *s)
{
    return !gw_committer_failed(&gw_fs(s)->committer);
}

static void refusal_file(struct gw_store *s, struct gw_store_refusal *out)
{
    struct gw_committer *c = &gw_fs(s)->committer;
    out->code = "journal_unavailable";
    out->retry = 0;
    gw_error_set(&out->error, "", "%s",
                 gw_committer_failed(c) ? c->error.msg : "journal: not accepting records");
}

/* The receipt of batch `id` the index placed at `ref` (with the claim's `fingerprint`, or NULL),
 * appended to `out`, as gw_store_read_receipt: a record there of another batch or fingerprint is
 * -EXDEV, the index wrong, never another batch's bytes served. */
static int read_ref(struct gw_store *s, struct gw_idem_ref ref, const char *id, size_t len,
                    const unsigned char *fingerprint, struct gw_buf *out,
                    struct gw_store_miss *miss)
{
    struct gw_store_file *f = gw_fs(s);
    struct gw_receipt_name name = {ref.seq, id, len, fingerprint, ref.fp_prefix};
    miss->seq = ref.seq;
    miss->segment = ref.segment;
    miss->line = gw_journal_receipt_line(ref.seq, ref.offset);
    if (gw_segments_archived(&f->journal.segs, ref.segment))
        return -ESTALE;
    /* appends nothing on an error */
    return gw_journal_read_receipt(&f->journal, ref.segment, &name, ref.offset, (size_t)ref.len,
                                   out);
}

/* -EUCLEAN: the index failed a block's checksum, said in miss->error. */
static int index_fault(struct gw_store_miss *miss)
{
    gw_error_set(&miss->error, "", "%s", GW_IDEM_BAD_BLOCK_MSG);
    return -EUCLEAN;
}

static int claim_file(struct gw_store *s, const char *id, size_t len,
                      const unsigned char *fingerprint, enum gw_commit_verdict *verdict,
                      struct gw_buf *stored, struct gw_store_miss *miss)
{
    static const enum gw_commit_verdict of[] = {
        [GW_IDEM_NEW] = GW_COMMIT_NEW,         [GW_IDEM_REPLAY] = GW_COMMIT_REPLAY,
        [GW_IDEM_REUSED] = GW_COMMIT_REUSED,   [GW_IDEM_IN_FLIGHT] = GW_COMMIT_IN_FLIGHT,
        [GW_IDEM_EXPIRED] = GW_COMMIT_EXPIRED,
    };
    enum gw_idem_verdict v;
    struct gw_idem_ref ref;
    int rc = gw_idem_claim(&gw_fs(s)->idem, id, len, fingerprint, &v, &ref);
    if (rc == -EIO)
        return index_fault(miss);
    if (rc != 0)
        return rc;
    *verdict = of[v];
    return v == GW_IDEM_REPLAY ? read_ref(s, ref, id, len, fingerprint, stored, miss) : 0;
}

static void release_file(struct gw_store *s, const char *id, size_t len)
{
    gw_idem_release(&gw_fs(s)->idem, id, len);
}

/* The journal writer's completion of a receipt: the index and the totals learn it before the
 * submitter does. */
static void journaled(struct gw_commit_item *item, int rc)
{
    struct gw_store *s = item->store;
    struct gw_store_file *f = gw_fs(s);
    size_t len = strlen(item->batch_id);
    if (rc == 0) {
        struct gw_idem_ref ref = {.segment = item->segment,
                                  .offset = item->receipt_offset,
                                  .len = item->receipt_len,
                                  .seq = item->seq};
        gw_idem_commit(&f->idem, item->batch_id, len, ref);
        /* Out of memory for the per-epoch totals only: this process writes no more
         * checkpoints, so the next start replays from the last good one (docs/journal.md §7).
         * The epoch_seq is the one the writer found at the receipt's place in the journal, as a
         * replay does, not the view's (they differ when an epoch id recurs). */
        gw_ledger_add(&s->ledger, item->epoch_seq ? item->epoch_seq : item->view_epoch_seq,
                      item->slots, item->tally, item->members->count);
    } else {
        gw_idem_release(&f->idem, item->batch_id, len);
    }
    item->submitter_done(item, rc);
}

static void submit_file(struct gw_store *s, struct gw_commit_item *item)
{
    item->receipt_crc = gw_record_crc(item->receipt, item->receipt_len);
    item->store = s;
    item->submitter_done = item->done;
    item->done = journaled;
    gw_committer_submit(&gw_fs(s)->committer, item);
}

static int read_receipt_file(struct gw_store *s, const char *id, size_t len, struct gw_buf *out,
                             struct gw_store_miss *miss)
{
    struct gw_idem_ref ref;
    int rc = gw_idem_find(&gw_fs(s)->idem, id, len, &ref);
    if (rc == -EIO)
        return index_fault(miss);
    return rc != 0 ? -ENOENT : read_ref(s, ref, id, len, NULL, out, miss);
}

static int feed_read_file(struct gw_store *s, uint64_t after, size_t max, gw_feed_visit_fn visit,
                          void *ctx, struct gw_feed_mark *pos, uint64_t *last,
                          struct gw_store_miss *miss)
{
    (void)max; /* read until the visitor stops */
    struct gw_feed_fault fault = {0};
    int rc = gw_feed_read(&gw_fs(s)->feed, after, visit, ctx, pos, last, &fault);
    miss->earliest = fault.earliest;
    miss->segment = fault.segment;
    miss->line = fault.offset;
    miss->seq = fault.seq;
    return rc;
}

static uint64_t feed_head_file(struct gw_store *s)
{
    return gw_feed_watch_head(&s->watch);
}

static int shard_totals_file(struct gw_store *s, const struct gw_membership *m,
                             struct gw_ledger_entry **out, size_t *count, struct gw_error *err)
{
    (void)m, (void)err; /* every shard of every epoch is registered in the ledger */
    *out = gw_ledger_snapshot(&s->ledger, count);
    return *out ? 0 : -ENOMEM;
}

static int member_totals_file(struct gw_store *s, const struct gw_membership *m,
                              const size_t *slots, struct gw_total *out, struct gw_error *err)
{
    (void)err;
    gw_ledger_totals(&s->ledger, slots, m->count, out);
    return 0;
}

/* Waits for one epoch record to be durable (the writer's completion). */
struct epoch_wait {
    struct gw_commit_item item;
    struct gw_ledger *ledger;
    struct gw_event synced;
};

/* On the writer's thread, before it offers a checkpoint: the record's weights and capacities join
 * the ledger at the record's place in the journal, so a checkpoint taken after the record holds
 * them, whenever the reload publishes its view (docs/journal.md §7). */
static void epoch_synced(struct gw_commit_item *item, int rc)
{
    struct epoch_wait *w = (struct epoch_wait *)item;
    if (rc == 0 && item->chained && gw_ledger_register(w->ledger, &item->epoch_of->members, NULL))
        rc = -ENOMEM;
    gw_event_set(&w->synced, rc);
}

/* Journals the epoch record of `t` after every receipt queued before it; returns once synced. */
static int journal_epoch(struct gw_store *s, const struct gw_topology *t,
                         enum gw_epoch_source source, struct gw_epoch_entry *out,
                         struct gw_error *err)
{
    struct gw_store_file *f = gw_fs(s);
    struct epoch_wait w = {.item = {.epoch_of = t, .source = source, .done = epoch_synced},
                           .ledger = &s->ledger};
    gw_event_init(&w.synced);
    gw_committer_submit(&f->committer, &w.item);
    int rc = gw_event_wait(&w.synced);
    gw_event_destroy(&w.synced);
    if (rc == 0 && !w.item.chained)
        rc = -ENOMEM;
    if (rc != 0)
        gw_error_set(err, "", "%s",
                     gw_committer_failed(&f->committer)
                         ? f->committer.error.msg
                         : "journal: the epoch record was not written");
    *out = w.item.entry;
    return rc;
}

static int record_epoch_file(struct gw_store *s, const struct gw_topology *next,
                             enum gw_epoch_source source, const char *base,
                             struct gw_epoch_entry *entry, struct gw_error *err)
{
    (void)base; /* one writer: no other can have recorded an epoch after it */
    return journal_epoch(s, next, source, entry, err);
}

static int catch_up_file(struct gw_store *s, gw_epoch_fn apply, void *ctx, struct gw_error *err)
{
    (void)s, (void)apply, (void)ctx, (void)err; /* no other writer records epochs */
    return 0;
}

static struct gw_epoch_chain *chain_file(struct gw_store *s)
{
    return &gw_fs(s)->journal.chain;
}

static int epoch_record_file(struct gw_store *s, const struct gw_epoch_entry *e, struct gw_buf *out,
                             struct gw_error *err)
{
    return gw_file_epoch_record(gw_fs(s)->journal.dir, e, out, err);
}

static const char *damage_what_file(int rc)
{
    return rc == -EILSEQ ? "the line at the index's position is not that record's"
                         : gw_record_fault(rc);
}

_Static_assert(GW_SEGMENT_NAME_MAX <= GW_STORE_FILE_NAME_MAX, "a segment's name fits the face's");

static void segment_file_file(struct gw_store *s, uint64_t segment, char *file)
{
    if (segment == atomic_load(&gw_fs(s)->journal.segment))
        snprintf(file, GW_SEGMENT_NAME_MAX, "%s", GW_JOURNAL_FILE);
    else
        gw_segment_name(file, segment);
}

const struct gw_store_ops gw_store_file_ops = {
    .check_name = "journal",
    .holds_membership = 0,
    .damage_what = damage_what_file,
    .segment_file = segment_file_file,
    .start = gw_store_start_file,
    .stop = stop_file,
    .close = close_file,
    .writable = writable_file,
    .refusal = refusal_file,
    .claim = claim_file,
    .release = release_file,
    .submit = submit_file,
    .read_receipt = read_receipt_file,
    .feed_read = feed_read_file,
    .feed_head = feed_head_file,
    .shard_totals = shard_totals_file,
    .member_totals = member_totals_file,
    .record_epoch = record_epoch_file,
    .catch_up = catch_up_file,
    .chain = chain_file,
    .epoch_record = epoch_record_file,
};
