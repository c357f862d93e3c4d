/* The health service's own ketama ring (docs/contract.md §3): points, id, and batched lookups. */
#ifndef HC_RING_H
#define HC_RING_H

#include <stddef.h>
#include <stdint.h>

#include "contract.h"
#include "digest.h"
#include "error.h"
#include "membership.h"

struct hc_point {
    uint32_t value;
    uint32_t shard; /* index into the membership (id order) */
    uint32_t vnode; /* k, the point's index within its shard */
};

struct hc_ring {
    enum hc_ring_kind kind;
    struct hc_point *points; /* ascending by (value, shard id, vnode); ketama only */
    size_t n;
    uint64_t vnodes_total;
    uint32_t *table; /* maglev, jump (docs/contract.md §11, §10): each slot's shard (membership
                        index); NULL when no shard is online, and under ketama */
    uint32_t table_size;          /* DISPATCH_MAGLEV_TABLE or DISPATCH_JUMP_SLOTS */
    char id[41];                  /* ring id: lowercase hex SHA-1, docs/contract.md §3 */
    struct hc_digest *key_digest; /* the contract digest, for key hashes */
};

/* The answer for one key. */
struct hc_hit {
    uint32_t point;
    uint32_t shard;
    uint32_t vnode;
    int wrap; /* 1: reason "wrap", 0: reason "ring" */
};

/* Computes the ring id text's SHA-1 for this contract and membership (online shards only).
 * Returns 0 or a negative code with err filled. */
int hc_ring_id(const struct hc_contract *c, const struct hc_membership *m, char id[41],
               struct hc_err *err);

/* Builds the ring of the online shards of m. Returns 0 or -ENOMEM / -EIO with err filled. */
int hc_ring_build(const struct hc_contract *c, const struct hc_membership *m, struct hc_ring *r,
                  struct hc_err *err);
void hc_ring_free(struct hc_ring *r);

/* hash(key) = LE32(H(key)[0..3]) with the contract digest. Returns 0 or -EIO. */
int hc_ring_key_hash(struct hc_ring *r, const void *key, size_t len, uint32_t *hash);

/* Under maglev or jump: the slot of a key (LE64 of its digest mod the table size, or jumped to)
 * and its shard. The table must not be empty. Returns 0 or -EIO. */
int hc_ring_place_table(struct hc_ring *r, const void *key, size_t len, struct hc_hit *out);

/* Looks up k hashes given in ascending order, by a galloping merge along the ring (each
 * lookup starts where the previous one ended). The ring must not be empty. */
void hc_ring_place_sorted(const struct hc_ring *r, const uint32_t *hashes, size_t k,
                          struct hc_hit *out);

#endif
