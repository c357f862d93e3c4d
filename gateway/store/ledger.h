/* Cumulative per-shard totals over every durable receipt (GET /v1/shards, /metrics).
 * Thread-safe. */
#ifndef SHARDGATE_GW_LEDGER_H
#define SHARDGATE_GW_LEDGER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "dispatch.h"

/* One shard's totals: 128-bit, so they stay exact (docs/api.md, GET /v1/shards); a receipt
 * adds at most 2^64 - 1 to each, so 2^64 receipts cannot wrap them. */
struct gw_total {
    gw_u128 load;
    gw_u128 received;
};

struct gw_ledger {
    pthread_mutex_t lock;
    struct gw_total *totals; /* one per membership shard, in id order */
    size_t count;
};

/* Returns 0 or -ENOMEM. */
int gw_ledger_init(struct gw_ledger *l, size_t shards);
void gw_ledger_free(struct gw_ledger *l);

/* Adds one receipt's per-shard tallies (`count` entries, in membership order). */
void gw_ledger_add(struct gw_ledger *l, const struct gw_tally *tally);

/* Adds to one shard (journal replay). */
void gw_ledger_add_one(struct gw_ledger *l, size_t shard, uint64_t load, uint64_t received);

/* Copies the totals into `out` (`count` entries). */
void gw_ledger_snapshot(struct gw_ledger *l, struct gw_total *out);

#endif
