/* A loaded topology: the contract, the membership and the ring of its online shards. */
#ifndef SHARDGATE_GW_TOPOLOGY_H
#define SHARDGATE_GW_TOPOLOGY_H

#include <stdint.h>

#include "buf.h"
#include "contract.h"
#include "epoch.h"
#include "error.h"
#include "membership.h"
#include "ring.h"

struct gw_topology {
    struct gw_contract contract;
    struct gw_membership members;     /* every shard, in id order */
    struct ring *ring;                /* online shards only */
    uint32_t *member_of;              /* ring shard index -> index in members */
    uint64_t capacity;                /* sum of capacity over online shards */
    char epoch[GW_EPOCH_HEX_LEN + 1]; /* docs/contract.md §7 */
    /* What every receipt of this topology repeats, rendered once when it is built: each online
     * shard's id as a JSON string (ring shard s's is shard_json[shard_at[s], shard_at[s + 1])),
     * and the ring object up to its points, unclosed (docs/contract.md §5; gw_ring_write). */
    struct gw_buf shard_json;
    uint32_t *shard_at;
    size_t shard_json_max; /* the longest of them */
    struct gw_buf ring_json;
};

/* Appends ring shard s's id as a JSON string. */
static inline void gw_topology_shard_json(const struct gw_topology *t, struct gw_buf *out,
                                          uint32_t s)
{
    gw_buf_append(out, t->shard_json.data + t->shard_at[s], t->shard_at[s + 1] - t->shard_at[s]);
}

/* Loads the contract and the membership and builds the ring. Returns 0, or a negative code
 * with err->msg naming the file and line or JSON path (both mean "unusable": exit 3). */
int gw_topology_load(const char *conf_path, const char *shards_path, struct gw_topology *out,
                     struct gw_error *err);

/* Builds the ring for a contract and a membership it takes ownership of. Returns 0 or a
 * negative code with a message in err. */
int gw_topology_build(const struct gw_contract *contract, struct gw_membership *members,
                      struct gw_topology *out, struct gw_error *err);

/* The same, with the ring built from `prev` (read only; NULL: from scratch), which hashes only
 * the points `prev` lacks (docs/decisions.md §6); the ring is the same either way. */
int gw_topology_build_from(const struct gw_contract *contract, struct gw_membership *members,
                           const struct ring *prev, struct gw_topology *out, struct gw_error *err);

void gw_topology_free(struct gw_topology *t);

#endif
