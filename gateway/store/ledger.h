/* Cumulative per-shard totals over every durable receipt, keyed by shard id across every epoch
 * (GET /v1/shards, /metrics). Thread-safe. */
#ifndef SHARDGATE_GW_LEDGER_H
#define SHARDGATE_GW_LEDGER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "dispatch.h"
#include "membership.h"

/* One shard's totals: 128-bit, so they stay exact (docs/api.md, GET /v1/shards); a receipt
 * adds at most 2^64 - 1 to each, so 2^64 receipts cannot wrap them. */
struct gw_total {
    gw_u128 load;
    gw_u128 received;
};

/* A shard seen in some epoch: its totals and its weight and capacity in the latest epoch that
 * held it. */
struct gw_ledger_entry {
    char id[GW_SHARD_ID_MAX + 1];
    size_t id_len;
    uint32_t weight;
    uint64_t capacity;
    struct gw_total total;
};

/* One epoch's totals by ledger slot (docs/journal.md §7: a checkpoint's "totals"). */
struct gw_ledger_epoch {
    uint64_t epoch_seq;
    struct gw_total *by_slot;
    size_t slots;
};

struct gw_ledger {
    pthread_mutex_t lock;
    struct gw_ledger_epoch *epochs; /* ascending epoch_seq */
    size_t epoch_count, epoch_cap;
    struct gw_ledger_entry *entries; /* append-only: a slot number never changes */
    size_t *by_id;                   /* slot numbers in bytewise id order */
    size_t count, cap;
    int epochs_incomplete; /* per-epoch totals once missed a receipt (out of memory): no
                            * checkpoint from this process, the next start replays */
};

/* Returns 0 or -ENOMEM. */
int gw_ledger_init(struct gw_ledger *l);
void gw_ledger_free(struct gw_ledger *l);

/* Makes every shard of `m` known (weight and capacity updated) and, when `slots` is not NULL,
 * writes each member's slot (m->count entries, membership order). Returns 0 or -ENOMEM. */
int gw_ledger_register(struct gw_ledger *l, const struct gw_membership *m, size_t *slots);

/* Adds one receipt of epoch `epoch_seq`: its per-shard tallies (`count` entries, membership
 * order, to `slots`). Returns 0, or -ENOMEM (the per-epoch totals could not grow). */
int gw_ledger_add(struct gw_ledger *l, uint64_t epoch_seq, const size_t *slots,
                  const struct gw_tally *tally, size_t count);

/* Adds to the shard with this id (journal replay) in epoch `epoch_seq`. Returns 0, -ENOENT
 * when it was never registered, -ENOMEM. */
int gw_ledger_add_id(struct gw_ledger *l, uint64_t epoch_seq, const char *id, size_t id_len,
                     uint64_t load, uint64_t received);

/* Sets a shard's weight, capacity and cumulative totals (restart from a checkpoint), making it
 * known. Returns 0 or -ENOMEM. */
int gw_ledger_restore(struct gw_ledger *l, const struct gw_ledger_entry *e);

/* Sets one shard's totals in epoch `epoch_seq` (restart from a checkpoint). Returns 0, -ENOENT
 * (unknown shard), -ENOMEM. */
int gw_ledger_restore_epoch(struct gw_ledger *l, uint64_t epoch_seq, const char *id, size_t id_len,
                            const struct gw_total *t);

/* Appends `"ledger":[...],"totals":[...]` of a checkpoint (docs/journal.md §7), one consistent
 * copy. Returns 0, or -ENOMEM when the per-epoch totals are incomplete (nothing appended). */
int gw_ledger_write_checkpoint(struct gw_ledger *l, struct gw_buf *out);

/* Copies the totals of `slots` (count of them) into `out`. */
void gw_ledger_totals(struct gw_ledger *l, const size_t *slots, size_t count, struct gw_total *out);

/* A copy of every entry in id order (*count of them; free() it). NULL when out of memory. */
struct gw_ledger_entry *gw_ledger_snapshot(struct gw_ledger *l, size_t *count);

#endif
