/* libring's lookup: the first point at or after a key's hash, one key or many at a time. */
#include "ring_internal.h"

#include <errno.h>

/* A bucket's points span about four cache lines; a lookup asks for at most this many. */
#define PREFETCH_LINES_MAX 8
#define CACHE_LINE 64

/* Asks for every cache line of points [lo, hi] at once (hi too: it is the answer when the
 * whole bucket is below the hash), so the binary search that follows waits for one memory
 * round trip, not one per probe that lands on a new line (docs/performance.md "Ring lookups"). */
static void prefetch_range(const struct ring *ring, size_t lo, size_t hi)
{
    if (hi < ring->npoints)
        hi++;
    uintptr_t at = (uintptr_t)(ring->points + lo) & ~(uintptr_t)(CACHE_LINE - 1);
    uintptr_t end = (uintptr_t)(ring->points + hi);
    for (int i = 0; i < PREFETCH_LINES_MAX && at < end; i++, at += CACHE_LINE)
        __builtin_prefetch((const void *)at);
}

/* The first point >= hash, searched within the hash's bucket. */
static void place(const struct ring *ring, uint32_t hash, struct ring_placement *out)
{
    uint64_t bucket = (uint64_t)hash >> ring->bucket_shift;
    size_t lo = ring->buckets[bucket], hi = ring->buckets[bucket + 1];
    prefetch_range(ring, lo, hi);
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
    prefetch_range(ring, ring->buckets[bucket], ring->buckets[bucket + 1]);
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
