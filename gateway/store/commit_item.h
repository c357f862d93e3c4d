/* What either store's writer takes: a receipt or an epoch record to commit, with the submitter's
 * completion; the queue both writers keep, and the hook told after each durable group. */
#ifndef SHARDGATE_GW_COMMIT_ITEM_H
#define SHARDGATE_GW_COMMIT_ITEM_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "chain.h"
#include "dispatch.h"
#include "topology.h"
#include "worker.h"

struct gw_commit_item;

/* What a store says of a batch_id, at its claim (gw_store_claim) and at its commit: one set for
 * both stores (docs/api.md §3). The file store decides at the claim, before dispatch, so its
 * commits always say NEW; the PostgreSQL store's claims always say NEW, and its transaction
 * decides, where another replica may have committed the same batch_id first. */
enum gw_commit_verdict {
    GW_COMMIT_NEW,       /* claimed; at the commit: recorded now, with `seq` */
    GW_COMMIT_REPLAY,    /* committed before with the same fingerprint: its stored receipt */
    GW_COMMIT_REUSED,    /* committed before with another fingerprint */
    GW_COMMIT_DAMAGED,   /* committed before with the same fingerprint; its row fails its check */
    GW_COMMIT_IN_FLIGHT, /* being committed by another request now */
    GW_COMMIT_EXPIRED,   /* acknowledged longer ago than the idempotency window */
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
    struct gw_error *damage;        /* GW_COMMIT_DAMAGED: receives the answer to the damage */
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

/* Appends `item` to the list head/tail guarded by w->lock and wakes the worker; when the worker
 * is stopping or never started, `done` runs at once with -EIO instead. The queue of the journal
 * writer and of the PostgreSQL store's writer. */
void gw_commit_enqueue(struct gw_worker *w, struct gw_commit_item **head,
                       struct gw_commit_item **tail, struct gw_commit_item *item);

/* Runs `done` of every item of the list with rc, in order (the list is unlinked first). */
void gw_commit_finish(struct gw_commit_item *list, int rc);

#endif
