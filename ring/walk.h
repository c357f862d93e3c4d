/* Walks over the hash space of one ring or two (docs/contract.md §3, §8). A key goes to the
 * first point at or after its hash, and past the last point to the first, so point i owns the
 * hashes after point i-1 up to its own, and point 0 those after the last point and up to its
 * own. Between two consecutive point values of either ring the owner is constant in both, so a
 * walk over the merged points sees every hash once, in arcs counted whole. Inline, so a walker's
 * callback is inlined where it is known (the movement plan walks millions of arcs). */
#ifndef SHARDGATE_RING_WALK_H
#define SHARDGATE_RING_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "ring.h"

#define RING_HASHES 4294967296ULL /* 2^32 */

/* The number of hashes point i of the n points `p` (ring order, n > 0) owns. */
static inline uint64_t ring_point_owns(const struct ring_point *p, size_t n, size_t i)
{
    return i > 0 ? (uint64_t)p[i].value - p[i - 1].value
                 : RING_HASHES - p[n - 1].value + p[0].value;
}

/* One arc of a walk over two rings: `len` (> 0) hashes from `start`, owned by ring a's shard
 * `shard_a` and ring b's `shard_b` (ring shard indexes). */
typedef void (*ring_pair_fn)(void *ctx, uint64_t start, uint64_t len, uint32_t shard_a,
                             uint32_t shard_b);

/* Calls fn for each arc between consecutive distinct point values of a and b, from hash 0 up,
 * the hashes above every point last. Both rings must have a point. */
static inline void ring_walk_pair(const struct ring *a, const struct ring *b, ring_pair_fn fn,
                                  void *ctx)
{
    const struct ring_point *pa = ring_points(a), *pb = ring_points(b);
    size_t na = ring_points_total(a), nb = ring_points_total(b), ia = 0, ib = 0;
    uint64_t start = 0;
    while (ia < na || ib < nb) {
        uint32_t v =
            ib >= nb || (ia < na && pa[ia].value <= pb[ib].value) ? pa[ia].value : pb[ib].value;
        /* owners: the first point >= v of each ring, else its point 0 (the wrap) */
        fn(ctx, start, (uint64_t)v + 1 - start, pa[ia < na ? ia : 0].shard,
           pb[ib < nb ? ib : 0].shard);
        start = (uint64_t)v + 1;
        while (ia < na && pa[ia].value == v)
            ia++;
        while (ib < nb && pb[ib].value == v)
            ib++;
    }
    if (start < RING_HASHES) /* above every point: each ring's point 0 */
        fn(ctx, start, RING_HASHES - start, pa[0].shard, pb[0].shard);
}

#endif
