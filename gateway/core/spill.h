/* The spill walk (docs/contract.md §9): where a change goes when its home shard has no room. */
#ifndef SHARDGATE_GW_SPILL_H
#define SHARDGATE_GW_SPILL_H

#include <stddef.h>
#include <stdint.h>

#include "ring.h"
#include "topology.h"

#define GW_SPILL_NO_HOME UINT32_MAX

/* One batch's spill state: running loads per ring shard and, built at the first walk, a max
 * tree over blocks of ring points holding an upper bound of the room of the shards in each
 * block. Loads only grow within a batch, so a bound only ever becomes too high: a walk skips
 * a subtree whose bound is below the size at once, and lowers a block's bound when it finds
 * it stale. Every walk is O(log P) tree steps plus the blocks it corrects (docs/performance.md
 * §8 has the worst case). */
struct gw_spill {
    const struct ring *ring;
    const struct ring_point *points; /* the ring's points, in ring order */
    size_t npoints;
    uint64_t *load;        /* per ring shard: sum of the sizes placed in this batch */
    uint64_t *cap;         /* per ring shard: its capacity */
    int64_t *bound;        /* 2 * leaves nodes, root at 1; NULL until the first walk */
    size_t nblocks;        /* blocks of GW_SPILL_BLOCK points */
    size_t leaves;         /* power of two >= nblocks */
    uint32_t *block_first; /* the value of each block's first point, for finding the home */
};

/* Starts a batch on topology t (whose ring is not empty) with every load 0. Returns 0 or
 * -ENOMEM. */
int gw_spill_init(struct gw_spill *w, const struct gw_topology *t);

/* Places one change of `size` whose home placement is *p, in batch order (rules 1-3 of
 * docs/contract.md §9). Returns 1 when it spilled (*p then names the point and shard that took
 * it; *home is the home ring shard), 0 when it stays home (room there, or none anywhere), or
 * -ENOMEM. */
int gw_spill_place(struct gw_spill *w, struct ring_placement *p, uint64_t size, uint32_t *home);

void gw_spill_free(struct gw_spill *w);

#endif
