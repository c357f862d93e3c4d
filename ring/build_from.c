/* libring's incremental build (docs/decisions.md §6): the ring of a new membership from the
 * previous ring. A point depends on its shard's id and its vnode alone (docs/contract.md §3), so
 * every point of a shard in both rings with a vnode below both counts is already in the previous
 * ring, in ring order; only the other points are hashed, sorted, and merged with those. */
#include "ring_internal.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DROPPED UINT32_MAX

/* What the new ring takes from the previous one. */
struct reuse {
    uint32_t *new_rank; /* previous rank -> rank in the new ring, or DROPPED */
    uint32_t *keep;     /* previous rank -> its points with vnode < keep stay (0: none) */
    size_t *from;       /* new rank -> the first vnode to hash (the points kept below it) */
    size_t total;       /* points of the new ring */
    size_t fresh;       /* of those, hashed anew */
};

static void free_reuse(struct reuse *r)
{
    free(r->new_rank);
    free(r->keep);
    free(r->from);
}

/* Walks both shard lists (each in id order) side by side. Returns 0 or -ENOMEM. */
static int match_shards(const struct ring *ring, const struct ring *prev, struct reuse *r)
{
    r->new_rank = malloc((prev->nshards ? prev->nshards : 1) * sizeof(*r->new_rank));
    r->keep = calloc(prev->nshards ? prev->nshards : 1, sizeof(*r->keep));
    r->from = calloc(ring->nshards ? ring->nshards : 1, sizeof(*r->from));
    if (!r->new_rank || !r->keep || !r->from)
        return -ENOMEM;
    for (size_t i = 0, j = 0; i < prev->nshards;) {
        const struct ring_shard_slot *a = &prev->shards[i];
        int c = j < ring->nshards
                    ? ring__id_compare(a->id, a->id_len, ring->shards[j].id, ring->shards[j].id_len)
                    : -1;
        if (c > 0) {
            j++;
            continue;
        }
        r->new_rank[i] = c < 0 ? DROPPED : (uint32_t)j;
        if (c == 0) {
            uint32_t w = a->weight < ring->shards[j].weight ? a->weight : ring->shards[j].weight;
            r->keep[i] = prev->vnodes * w; /* <= RING_VNODES_MAX * RING_WEIGHT_MAX */
            r->from[j++] = r->keep[i];
        }
        i++;
    }
    for (size_t j = 0; j < ring->nshards; j++) {
        size_t count = (size_t)ring->vnodes * ring->shards[j].weight;
        r->total += count;
        r->fresh += count - r->from[j];
    }
    return 0;
}

/* A stable LSD radix sort of n points by value, four 8-bit passes; the result is in `a`. */
static void sort_by_value(struct ring_point *a, struct ring_point *tmp, size_t n)
{
    for (unsigned shift = 0; shift < 32; shift += 8) {
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++)
            count[((a[i].value >> shift) & 255) + 1]++;
        for (size_t d = 1; d < 257; d++)
            count[d] += count[d - 1];
        for (size_t i = 0; i < n; i++)
            tmp[count[(a[i].value >> shift) & 255]++] = a[i];
        struct ring_point *t = a;
        a = tmp;
        tmp = t;
    }
}

/* The points hashed anew, in ring order: generated in (rank, vnode) order, so a stable sort by
 * value gives the (value, shard id, vnode) order. Returns them (r->fresh), or NULL. */
static struct ring_point *fresh_points(const struct ring *ring, const struct reuse *r)
{
    struct ring_point *a = malloc((r->fresh ? r->fresh : 1) * sizeof(*a));
    struct ring_point *tmp = malloc((r->fresh ? r->fresh : 1) * sizeof(*tmp));
    if (!a || !tmp) {
        free(a);
        free(tmp);
        return NULL;
    }
    size_t n = 0;
    for (uint32_t j = 0; j < ring->nshards; j++)
        n += ring__shard_points(ring, j, r->from[j], a + n);
    assert(n == r->fresh);
    sort_by_value(a, tmp, n);
    free(tmp);
    return a;
}

/* The merge's output: the points so far, and the buckets up to the last point's. */
struct merge_out {
    struct ring *ring;
    size_t n;
    size_t bucket; /* buckets below this one are filled */
};

static void emit(struct merge_out *m, struct ring_point p)
{
    size_t b = (size_t)((uint64_t)p.value >> m->ring->bucket_shift);
    while (m->bucket <= b)
        m->ring->buckets[m->bucket++] = (uint32_t)m->n;
    m->ring->points[m->n++] = p;
}

/* The contract's order: value, then shard rank, then vnode. */
static int before(struct ring_point a, struct ring_point b)
{
    if (a.value != b.value)
        return a.value < b.value;
    return a.shard != b.shard ? a.shard < b.shard : a.vnode < b.vnode;
}

/* Merges the kept points of `prev` (renumbered to the new ranks) with the fresh ones, filling
 * the buckets on the way. */
static void merge(struct ring *ring, const struct ring *prev, const struct reuse *r,
                  const struct ring_point *fresh)
{
    struct merge_out m = {ring, 0, 0};
    size_t j = 0;
    for (size_t i = 0; i < prev->npoints; i++) {
        struct ring_point p = prev->points[i];
        assert(p.shard < prev->nshards);
        if (p.vnode >= r->keep[p.shard])
            continue;
        p.shard = r->new_rank[p.shard];
        while (j < r->fresh && before(fresh[j], p))
            emit(&m, fresh[j++]);
        emit(&m, p);
    }
    while (j < r->fresh)
        emit(&m, fresh[j++]);
    size_t nb = (size_t)1 << (32 - ring->bucket_shift);
    while (m.bucket <= nb)
        ring->buckets[m.bucket++] = (uint32_t)m.n;
    ring->npoints = m.n;
}

int ring__build_points_from(struct ring *ring, const struct ring *prev)
{
    struct reuse r = {0};
    struct ring_point *fresh = NULL;
    unsigned bits;
    assert(prev->digest == ring->digest && prev->vnodes == ring->vnodes);
    int rc = match_shards(ring, prev, &r);
    if (rc == 0 && r.total > UINT32_MAX)
        rc = -EINVAL;
    else if (rc == 0 && 2 * r.fresh > r.total) /* mostly new: the full build is as fast */
        rc = 1;
    if (rc == 0)
        rc = ring__alloc_arrays(ring, r.total, &bits);
    if (rc == 0 && !(fresh = fresh_points(ring, &r)))
        rc = -ENOMEM;
    if (rc == 0) {
        merge(ring, prev, &r, fresh);
        assert(ring->npoints == r.total);
        ring__finish_points(ring);
        ring__check(ring);
    }
    free(fresh);
    free_reuse(&r);
    return rc;
}
