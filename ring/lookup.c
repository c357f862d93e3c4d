/* libring's lookup: the first point at or after a key's hash, one key or many at a time. */
#include "ring_internal.h"

#include <errno.h>

/* The first point >= hash, searched within the hash's bucket. */
static void place(const struct ring *ring, uint32_t hash, struct ring_placement *out)
{
    uint64_t bucket = (uint64_t)hash >> ring->bucket_shift;
    size_t lo = ring->buckets[bucket], hi = ring->buckets[bucket + 1];
    /* First value >= hash in [lo, hi); if none, it is hi (the next bucket's first point). */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ring->points[mid].value < hash)
            lo = mid + 1;
        else
            hi = mid;
    }
    out->wrapped = lo == ring->npoints;
    if (out->wrapped)
        lo = 0;
    out->hash = hash;
    out->point = ring->points[lo].value;
    out->shard = ring->points[lo].shard;
    out->vnode = ring->points[lo].vnode;
}

int ring_lookup_hash(const struct ring *ring, uint32_t hash, struct ring_placement *out)
{
    if (ring->npoints == 0)
        return -ENOENT;
    place(ring, hash, out);
    return 0;
}

/* How far ahead ring_lookup_hashes prefetches: buckets 2*AHEAD keys ahead, points AHEAD. */
#define AHEAD 8

static void prefetch_points(const struct ring *ring, uint32_t hash)
{
    uint64_t bucket = (uint64_t)hash >> ring->bucket_shift;
    const struct ring_point *p = ring->points + ring->buckets[bucket];
    __builtin_prefetch(p);
    __builtin_prefetch(p + 4);
}

int ring_lookup_hashes(const struct ring *ring, const uint32_t *hashes, size_t n,
                       struct ring_placement *out)
{
    if (ring->npoints == 0)
        return -ENOENT;
    for (size_t i = 0; i < n; i++) {
        if (i + 2 * AHEAD < n)
            __builtin_prefetch(
                &ring->buckets[(uint64_t)hashes[i + 2 * AHEAD] >> ring->bucket_shift]);
        if (i + AHEAD < n)
            prefetch_points(ring, hashes[i + AHEAD]);
        place(ring, hashes[i], &out[i]);
    }
    return 0;
}

int ring_lookup(const struct ring *ring, const void *key, size_t len, struct ring_placement *out)
{
    if (ring->npoints == 0)
        return -ENOENT;
    return ring_lookup_hash(ring, ring_hash_key(ring, key, len), out);
}
