/* libring's private parts: the ring object and the functions its files share (not for callers). */
#ifndef SHARDGATE_RING_INTERNAL_H
#define SHARDGATE_RING_INTERNAL_H

#include "ring.h"

#define RING_ID_PREFIX_MAX 64
#define RING_ONE_BLOCK_MAX 55 /* longest message whose padding fits one 64-byte block */

struct ring_shard_slot {
    char *id;
    size_t id_len;
    uint32_t weight;
};

/* Single-key lookups count, without a branch, how many of RING_WINDOW points from a guessed
 * start are below the hash; the point array ends with RING_WINDOW points of value UINT32_MAX
 * so a window never reads past it (lookup.c). */
#define RING_WINDOW 8

/* Each coarse bucket spans 2^RING_COARSE_FACTOR buckets: 16 to 32 points, 24 at 10,000 x 160. */
#define RING_COARSE_FACTOR 3

struct ring {
    enum ring_digest digest;
    uint32_t vnodes;
    size_t nshards;
    struct ring_shard_slot *shards; /* in id order */
    size_t npoints;
    struct ring_point *points; /* in ring order, then RING_WINDOW padding points */
    unsigned bucket_shift;     /* a hash's bucket is hash >> bucket_shift (64-bit shift) */
    uint32_t *buckets;         /* buckets[b]: first point whose bucket >= b; 2^bits + 1 */
    /* The same for single-key lookups, 2^RING_COARSE_FACTOR times coarser: 256 KiB at
     * 10,000 x 160, small enough to stay in the core's cache while the points do not. */
    unsigned coarse_shift;
    uint32_t *coarse;
    char id[RING_ID_HEX_LEN + 1];
};

/* hash.c: the digest's size in bytes (16 or 20). */
size_t ring__digest_len(enum ring_digest digest);

/* hash.c: the digest of `data` as LE32 words, w[j] = LE32(d[4j..4j+3]); w holds 5 words. */
void ring__digest_words(enum ring_digest digest, const void *data, size_t len, uint32_t *w);

/* build.c: fills ring->points (generated, sorted, padded), ring->buckets and ring->coarse
 * from ring->shards.
 * Returns 0, -EINVAL (more than UINT32_MAX points) or -ENOMEM. */
int ring__build_points(struct ring *ring);

#endif
