/* libring's lookup: the first point at or after a key's hash, one key or many at a time. */
#include "ring_internal.h"

#include <errno.h>

/* Fills `out` for the point at index `at`, the first point >= hash (npoints: none, so the
 * key wraps to the first point). */
static void answer(const struct ring *ring, uint32_t hash, size_t at, struct ring_placement *out)
{
    out->wrapped = at == ring->npoints;
    if (out->wrapped)
        at = 0;
    out->hash = hash;
    out->point = ring->points[at].value;
    out->shard = ring->points[at].shard;
    out->vnode = ring->points[at].vnode;
}

/* The index of the first point >= hash (npoints if none), binary-searched within the hash's
 * bucket: for ring_lookup_hashes, which has prefetched the bucket's lines. */
static size_t bucket_at_or_after(const struct ring *ring, uint32_t hash)
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
    return lo;
}

/* How many of the RING_WINDOW points from `p` have a value below `hash`: a fixed count with no
 * branch on the values. */
static size_t count_below(const struct ring_point *p, uint32_t hash)
{
    size_t below = 0;
    for (size_t j = 0; j < RING_WINDOW; j++)
        below += p[j].value < hash;
    return below;
}

/* The index of the first point >= hash (npoints if none) for a single key, whose wait no other
 * key hides: one trip to memory, not two (docs/decisions.md §5, docs/performance.md §2.2).
 * The coarse bucket table stays in cache, so its read is quick; the points are spread evenly
 * over a bucket, so the answer's place in it is guessed by interpolation, and the RING_WINDOW
 * points from RING_WINDOW / 2 before the guess (two or three cache lines, fetched together)
 * are counted without a branch on their values. Every point before a window that starts at
 * the bucket's first point, or at a point below the hash, is below the hash, so the answer is
 * the window's start plus its count, unless the whole window is below (count the next window;
 * the padding stops the walk at npoints) or a window starting inside the bucket is entirely
 * above (count again from the bucket's first point). Both are rare. */
static size_t single_at_or_after(const struct ring *ring, uint32_t hash)
{
    unsigned shift = ring->coarse_shift;
    uint64_t c = (uint64_t)hash >> shift;
    size_t lo = ring->coarse[c], n = ring->coarse[c + 1] - lo;
    uint64_t within = hash & (((uint64_t)1 << shift) - 1);
    size_t guess = lo + (size_t)((within * n) >> shift);
    size_t at = guess > lo + RING_WINDOW / 2 ? guess - RING_WINDOW / 2 : lo;
    size_t below = count_below(ring->points + at, hash);
    if (below == 0 && at > lo) {
        at = lo;
        below = count_below(ring->points + at, hash);
    }
    while (below == RING_WINDOW) {
        at += RING_WINDOW;
        below = count_below(ring->points + at, hash);
    }
    return at + below;
}

int ring_lookup_hash(const struct ring *ring, uint32_t hash, struct ring_placement *out)
{
    if (ring->npoints == 0)
        return -ENOENT;
    answer(ring, hash, single_at_or_after(ring, hash), out);
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
        answer(ring, hashes[i], bucket_at_or_after(ring, hashes[i]), &out[i]);
    }
    return 0;
}

/* A key's place in a Maglev or jump table, its shard not yet read: the slot of the key's 64
 * bits, by modulo (docs/contract.md §11) or by jump (docs/contract.md §10). */
static struct ring_placement table_slot(const struct ring *ring, const void *key, size_t len)
{
    uint64_t bits = ring_digest_u64(ring->digest, key, len);
    uint32_t slot = ring->algorithm == RING_JUMP
                        ? (uint32_t)ring_jump(bits, (int32_t)ring->table_size)
                        : (uint32_t)(bits % ring->table_size);
    return (struct ring_placement){.hash = (uint32_t)bits, .point = slot};
}

static int table_lookup(const struct ring *ring, const void *key, size_t len,
                        struct ring_placement *out)
{
    if (ring->nshards == 0)
        return -ENOENT;
    *out = table_slot(ring, key, len);
    out->shard = ring->table[out->point];
    return 0;
}

int ring_lookup_keys(const struct ring *ring, const char *const *keys, const size_t *lens, size_t n,
                     struct ring_placement *out)
{
    if (ring->nshards == 0)
        return -ENOENT;
    if (ring->algorithm == RING_KETAMA) {
        enum { CHUNK = 256 };
        uint32_t hash[CHUNK];
        for (size_t at = 0; at < n; at += CHUNK) {
            size_t k = n - at < CHUNK ? n - at : CHUNK;
            ring_hash_keys(ring, keys + at, lens + at, k, hash);
            ring_lookup_hashes(ring, hash, k, out + at);
        }
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        out[i] = table_slot(ring, keys[i], lens[i]);
        __builtin_prefetch(&ring->table[out[i].point]);
    }
    for (size_t i = 0; i < n; i++)
        out[i].shard = ring->table[out[i].point];
    return 0;
}

int ring_lookup(const struct ring *ring, const void *key, size_t len, struct ring_placement *out)
{
    if (ring->algorithm != RING_KETAMA)
        return table_lookup(ring, key, len, out);
    if (ring->npoints == 0)
        return -ENOENT;
    return ring_lookup_hash(ring, ring_hash_key(ring, key, len), out);
}
