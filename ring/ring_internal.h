/* libring's private parts: the ring object and the functions its files share (not for callers). */
#ifndef SHARDGATE_RING_INTERNAL_H
#define SHARDGATE_RING_INTERNAL_H

#include <string.h>

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
    enum ring_algorithm algorithm;
    enum ring_digest digest;
    uint32_t vnodes;     /* ketama */
    uint32_t table_size; /* maglev, jump: the slots of `table`, which holds each one's shard */
    uint32_t *table;
    struct ring
        *under; /* jump: the ketama ring its table was drawn from, kept for the next build */
    size_t nshards;
    struct ring_shard_slot *shards; /* in id order */
    size_t npoints;
    struct ring_point *points;          /* in ring order, then RING_WINDOW padding points */
    size_t points_bytes, buckets_bytes; /* as allocated (ring__big_alloc) */
    unsigned bucket_shift;              /* a hash's bucket is hash >> bucket_shift (64-bit shift) */
    uint32_t *buckets;                  /* buckets[b]: first point whose bucket >= b; 2^bits + 1 */
    /* The same for single-key lookups, 2^RING_COARSE_FACTOR times coarser: 256 KiB at
     * 10,000 x 160, small enough to stay in the core's cache while the points do not. */
    unsigned coarse_shift;
    uint32_t *coarse;
    char id[RING_ID_HEX_LEN + 1];
};

/* memory.c: `bytes` of memory for a big array (huge pages from 2 MiB; a spare left by a freed
 * ring when one fits), or NULL. Released by ring__big_free with the same `bytes`. */
void *ring__big_alloc(size_t bytes);
void ring__big_free(void *p, size_t bytes);

/* Shard ids compare bytewise, a prefix before the longer id (<0, 0, >0). Here, not in ring.c,
 * so that build_from.c, which ring.c calls, need not call back into ring.c. */
static inline int ring__id_compare(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c != 0)
        return c;
    return (alen > blen) - (alen < blen);
}

/* ring.c: copies and sorts the shards into ring->shards. Returns 0, -EINVAL or -ENOMEM (err). */
int ring__copy_shards(struct ring *ring, const struct ring_shard *shards, size_t n,
                      struct ring_error *err);

/* ring.c: a ring with nothing in it yet, or NULL (out of memory, said in err). */
struct ring *ring__new(enum ring_algorithm algorithm, enum ring_digest digest,
                       struct ring_error *err);

/* ring.c: the end of a build whose steps returned rc: the ring with its id in *out (0), or
 * freed, with "out of memory" in err for -ENOMEM (rc). */
int ring__finish(struct ring *ring, int rc, struct ring **out, struct ring_error *err);

/* ring.c: sets ring->id from its algorithm, digest, size and shards (docs/contract.md §3). */
void ring__compute_id(struct ring *ring);

/* hash.c: the digest's size in bytes (16 or 20). */
size_t ring__digest_len(enum ring_digest digest);

/* hash.c: the digest of `data` as LE32 words, w[j] = LE32(d[4j..4j+3]); w holds 5 words. */
void ring__digest_words(enum ring_digest digest, const void *data, size_t len, uint32_t *w);

/* build.c: fills ring->points (generated, sorted, padded), ring->buckets and ring->coarse
 * from ring->shards.
 * Returns 0, -EINVAL (more than UINT32_MAX points) or -ENOMEM. */
int ring__build_points(struct ring *ring);

/* build.c: writes the points of shard `rank` with vnodes from, from + 1, ..., vnodes * weight - 1
 * (in vnode order) to `out`; returns how many (0 when from is past the last). */
size_t ring__shard_points(const struct ring *ring, uint32_t rank, size_t from,
                          struct ring_point *out);

/* build.c: sizes the buckets for `total` points (ring->bucket_shift, ring->coarse_shift, the
 * bucket bits in *bits) and allocates ring->points (total plus the padding), ring->buckets and
 * ring->coarse. Returns 0 or -ENOMEM (what was allocated is freed by ring_free). */
int ring__alloc_arrays(struct ring *ring, size_t total, unsigned *bits);

/* build.c: the padding after the last point and the coarse buckets from the buckets. */
void ring__finish_points(struct ring *ring);

/* build.c: in debug builds, asserts the ring order, the buckets and the padding. */
void ring__check(const struct ring *ring);

/* build_from.c: fills ring->points, ring->buckets and ring->coarse from ring->shards as
 * ring__build_points does, byte for byte, reusing the points of `prev` (same digest and vnodes):
 * a shard in both keeps its points with vnode < min(old, new count), the rest is hashed anew,
 * and the two sorted runs are merged. Returns 0, 1 when hashing anew would be most of the work
 * (the caller builds from scratch), -EINVAL (more than UINT32_MAX points) or -ENOMEM. */
int ring__build_points_from(struct ring *ring, const struct ring *prev);

#endif
