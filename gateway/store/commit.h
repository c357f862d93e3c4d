/* Group commit: one writer thread turns every pending receipt into one write + fdatasync, so
 * concurrent requests share the cost of a sync and no request thread ever blocks on the disk. */
#ifndef SHARDGATE_GW_COMMIT_H
#define SHARDGATE_GW_COMMIT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "buf.h"
#include "checkpointer.h"
#include "dispatch.h"
#include "error.h"
#include "journal.h"
#include "metrics.h"
#include "worker.h"

struct gw_commit_item;

/* What committing a receipt did. The file store decides replays before dispatch, so it always
 * says NEW; the PostgreSQL store decides in the transaction, where another replica may have
 * committed the same batch_id first (docs/api.md §3). */
enum gw_commit_verdict {
    GW_COMMIT_NEW,    /* journaled now, with `seq` */
    GW_COMMIT_REPLAY, /* the batch_id was committed before with the same fingerprint */
    GW_COMMIT_REUSED, /* the batch_id was committed before with another fingerprint */
};

/* Called once per item from the writer thread: rc 0 when the record is durable, else a
 * negative code (the record is not in the journal). */
typedef void (*gw_commit_done_fn)(struct gw_commit_item *item, int rc);

/* One record to journal: a receipt, or (epoch_of set) the epoch record of a reload, laid out
 * by the writer so that its first_seq follows the receipts before it (docs/journal.md §2). The
 * submitter keeps what it points to alive until `done` runs. */
struct gw_commit_item {
    const struct gw_topology *epoch_of; /* NULL for a receipt */
    enum gw_epoch_source source;        /* epoch records only */
    struct gw_epoch_entry entry; /* epoch records: set by the writer, in the chain once durable */
    int chained;                 /* epoch records: 1 once added to the chain (else -ENOMEM) */
    const char *receipt;
    size_t receipt_len;
    unsigned long receipt_crc; /* gw_record_crc of the receipt, from the submitter's thread */
    const unsigned char *fingerprint;
    uint64_t shard_bits; /* receipts: the feed bits of the shards it places on (feed_watch.h) */
    /* --store postgres (pg_store.h): what the transaction needs, and the verdict it gives */
    const char *batch_id;
    const char *epoch;                   /* the epoch id the receipt names */
    const struct gw_membership *members; /* of that epoch; tally is per member */
    const struct gw_tally *tally;
    enum gw_commit_verdict verdict; /* set before `done` with rc 0 */
    struct gw_buf *stored;          /* GW_COMMIT_REPLAY: receives the stored receipt */
    /* the state dir's store: the view's epoch_seq and ledger slots, for the totals it adds */
    uint64_t view_epoch_seq;
    const size_t *slots;
    gw_commit_done_fn done;
    gw_commit_done_fn submitter_done; /* gw_store_submit: the submitter's `done`, run after */
    void *store;                      /* gw_store_submit: the store it was submitted to */
    uint64_t seq;                     /* set before `done`, when durable */
    /* receipts, set before `done`: the epoch_seq its totals count under, that of the latest
     * chain entry with its `epoch` at its place in the journal (docs/journal.md §7); 0 when
     * the chain has none (an epoch record that could not join it) */
    uint64_t epoch_seq;
    uint64_t segment;        /* first_seq of the segment holding it (docs/journal.md §6) */
    uint64_t receipt_offset; /* where the receipt bytes are in that segment */
    struct gw_commit_item *next;
};

/* Told after each durable group: every receipt <= last_seq is in the journal, synced (the
 * assignment feed's bound, docs/api.md §17); shard_bits is the union of the group's receipts'
 * shard_bits, all bits when it holds an epoch record. Runs on the writer thread: it must be
 * quick. */
struct gw_commit_hook {
    void (*durable)(void *ctx, uint64_t last_seq, uint64_t shard_bits);
    void *ctx;
};

struct gw_committer {
    struct gw_journal *journal;
    struct gw_commit_hook hook; /* durable NULL: none */
    struct gw_metrics *metrics;
    struct gw_checkpointer *checkpointer; /* NULL: no checkpoints */
    unsigned delay_ms; /* test only: sleep before each group (SHARDGATE_TEST_COMMIT_DELAY_MS) */
    struct gw_worker worker; /* the writer; its lock guards head, tail and stopping */
    struct gw_commit_item *head, *tail;
    atomic_int failed;     /* set for good after the first write or sync failure */
    struct gw_error error; /* what failed (written once, before `failed` is set) */
    struct gw_buf group;
    size_t epoch_at, epoch_len; /* the group's last epoch record line in `group` (len 0: none) */
};

/* Starts the writer for `journal`; it rotates segments and offers the checkpointer (may be
 * NULL) a snapshot between groups; `hook` (may be NULL) is told after each durable group.
 * Returns 0 or a negative code with err->msg. */
int gw_committer_start(struct gw_committer *c, struct gw_journal *journal,
                       struct gw_metrics *metrics, struct gw_checkpointer *checkpointer,
                       unsigned delay_ms, const struct gw_commit_hook *hook, struct gw_error *err);

/* Appends `item` to the list head/tail guarded by w->lock and wakes the worker; when the worker
 * is stopping or never started, `done` runs at once with -EIO instead. The queue of the journal
 * writer and of the PostgreSQL store's writer. */
void gw_commit_enqueue(struct gw_worker *w, struct gw_commit_item **head,
                       struct gw_commit_item **tail, struct gw_commit_item *item);

/* Runs `done` of every item of the list with rc, in order (the list is unlinked first). */
void gw_commit_finish(struct gw_commit_item *list, int rc);

/* Queues an item; its `done` runs on the writer thread (at once with -EIO when the journal has
 * failed or the writer is stopping). */
void gw_committer_submit(struct gw_committer *c, struct gw_commit_item *item);

/* 1 once a write or sync failed: the journal takes no more records. */
int gw_committer_failed(struct gw_committer *c);

/* Writes everything still queued, then stops the writer thread. The lock stays valid: later
 * submits are refused with -EIO at once, so a request racing the shutdown is safe. */
void gw_committer_stop(struct gw_committer *c);

/* Stops the writer if needed and frees the lock, condition and buffer. Call only once nothing
 * can submit any more (the HTTP daemon stopped). */
void gw_committer_destroy(struct gw_committer *c);

#endif
