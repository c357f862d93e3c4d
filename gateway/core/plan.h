/* The movement plan between two epochs (docs/contract.md §8, docs/tools.md §1): which 32-bit
 * hash values change shard, by arc arithmetic over the two rings' sorted points, and how many
 * journaled changes would move. */
#ifndef SHARDGATE_GW_PLAN_H
#define SHARDGATE_GW_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "error.h"
#include "topology.h"

#define GW_PLAN_HASH_SPACE 4294967296ULL /* 2^32 hash values */

/* One shard of either membership: how many hash values it owns in each ring. */
struct gw_plan_shard {
    char id[GW_SHARD_ID_MAX + 1];
    size_t id_len;
    uint64_t before; /* owned in the from ring (0 when not online there) */
    uint64_t after;  /* owned in the to ring */
};

/* The hash values [lo, hi) that move from shard `from` to shard `to` (plan shard indexes):
 * a maximal run of consecutive values with that pair (docs/contract.md §8). */
struct gw_plan_range {
    uint64_t lo, hi;
    uint32_t from, to;
};

/* Hash values owned by `from` in the from ring and by `to` in the to ring (from != to). */
struct gw_plan_pair {
    uint32_t from, to; /* indexes into gw_plan.shards */
    uint64_t moved_points;
};

struct gw_plan {
    char from_epoch[GW_EPOCH_HEX_LEN + 1], to_epoch[GW_EPOCH_HEX_LEN + 1];
    char from_ring[RING_ID_HEX_LEN + 1], to_ring[RING_ID_HEX_LEN + 1];
    uint64_t space; /* the units the points count: 2^32 hash values, or a Maglev table's slots */
    uint64_t moved_points;
    uint64_t minimum_points;      /* the least any remapping moves (docs/contract.md §8) */
    struct gw_plan_shard *shards; /* every id of either membership, bytewise id order */
    size_t shard_count;
    struct gw_plan_pair *pairs; /* non-zero pairs sorted by from then to */
    size_t pair_count;
    int has_ranges;               /* asked of gw_plan_compute */
    struct gw_plan_range *ranges; /* every range that moves, ascending */
    size_t range_count;
    int has_journal; /* set by gw_plan_add_change */
    uint64_t changes, moved_changes;
    gw_u128 moved_load;
    int counts_spills; /* the to contract's policy is spill: `spilled` is written */
    uint64_t spilled;  /* journaled changes that would spill on the to ring */
};

/* Computes the plan from `from` to `to`, with the ranges that move when `ranges` is set
 * (`plan --ranges`). Returns 0; -ENOENT when either ring has no online shard (err->msg "plan:
 * from ring has no online shard", or "to"); -ENOMEM. The plan holds nothing of the topologies
 * after it returns. */
int gw_plan_compute(const struct gw_topology *from, const struct gw_topology *to, int ranges,
                    struct gw_plan *out, struct gw_error *err);

/* Counts one journaled change into the journal block (and marks it present): it moves when
 * the owner of `key` in the from ring differs from its owner in the to ring. `from` and `to`
 * are those the plan was computed with. */
void gw_plan_add_change(struct gw_plan *p, const struct gw_topology *from,
                        const struct gw_topology *to, const char *key, size_t key_len,
                        uint64_t size);

/* moved_points / space. */
double gw_plan_fraction(const struct gw_plan *p);

/* minimum_points / space. */
double gw_plan_minimum_fraction(const struct gw_plan *p);

/* Appends the plan as one line of compact JSON (docs/tools.md §1), without a newline. */
void gw_plan_write(struct gw_buf *out, const struct gw_plan *p);

void gw_plan_free(struct gw_plan *p);

#endif
