/* Dispatch (docs/contract.md §5): every change placed on the ring, loads summed by size. */
#ifndef SHARDGATE_GW_DISPATCH_H
#define SHARDGATE_GW_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "error.h"
#include "ring.h"
#include "topology.h"

struct gw_tally {
    uint64_t load;     /* sum of the sizes placed on the shard */
    uint64_t received; /* number of changes placed on the shard */
};

struct gw_dispatch {
    struct ring_placement *placements; /* one per change, in batch order */
    uint32_t *member;                  /* index in the membership of each placement's shard */
    struct gw_tally *tally;            /* one per membership shard, in id order */
    uint32_t *home;    /* spill only (else NULL): each placement's home ring shard when it spilled,
                          GW_SPILL_NO_HOME when it did not (docs/contract.md §9) */
    size_t spilled;    /* placements that spilled */
    size_t dispatched; /* changes placed on an online shard */
    size_t over_capacity_shards;
    int ok; /* every change on an online shard and no shard over capacity */
};

/* Places every change of `b` (under DISPATCH_CAPACITY_POLICY=spill in batch order, moving what
 * does not fit: docs/contract.md §9). Returns 0; -ENOENT when no shard is online (nothing can be
 * placed); -ENOMEM. On error nothing needs freeing. */
int gw_dispatch_run(const struct gw_topology *t, const struct gw_batch *b, struct gw_dispatch *out,
                    struct gw_error *err);

/* 1 when membership shard `i` received more than its capacity in this batch. */
int gw_dispatch_over_capacity(const struct gw_topology *t, const struct gw_dispatch *d, size_t i);

void gw_dispatch_free(struct gw_dispatch *d);

#endif
