/* The spill walk: the first shard with room clockwise, found through a max tree of room bounds. */
#include "spill.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { GW_SPILL_BLOCK = 16 };

int gw_spill_init(struct gw_spill *w, const struct gw_topology *t)
{
    memset(w, 0, sizeof(*w));
    w->ring = t->ring;
    w->points = ring_points(t->ring);
    w->npoints = ring_points_total(t->ring);
    size_t n = ring_shard_count(t->ring);
    w->load = calloc(n ? n : 1, sizeof(*w->load));
    w->cap = malloc((n ? n : 1) * sizeof(*w->cap));
    if (!w->load || !w->cap) {
        gw_spill_free(w);
        return -ENOMEM;
    }
    for (uint32_t s = 0; s < n; s++)
        w->cap[s] = t->members.shards[t->member_of[s]].capacity;
    return 0;
}

void gw_spill_free(struct gw_spill *w)
{
    free(w->load);
    free(w->cap);
    free(w->bound);
    free(w->block_first);
    memset(w, 0, sizeof(*w));
}

/* Rule 1's test, and the walk's: load(t) + s <= capacity(t). Loads and sizes of a batch stay
 * below 2^53 (docs/contract.md §4), so the sum cannot wrap. */
static int fits(const struct gw_spill *w, uint32_t shard, uint64_t size)
{
    return w->load[shard] + size <= w->cap[shard];
}

static uint32_t shard_at(const struct gw_spill *w, size_t point)
{
    return w->points[point].shard;
}

static int64_t room(const struct gw_spill *w, uint32_t shard)
{
    return (int64_t)w->cap[shard] - (int64_t)w->load[shard];
}

/* The largest room over the shards of block b's points, now. */
static int64_t block_room(const struct gw_spill *w, size_t b)
{
    size_t end = (b + 1) * GW_SPILL_BLOCK < w->npoints ? (b + 1) * GW_SPILL_BLOCK : w->npoints;
    int64_t best = INT64_MIN;
    for (size_t q = b * GW_SPILL_BLOCK; q < end; q++) {
        int64_t r = room(w, shard_at(w, q));
        best = r > best ? r : best;
    }
    return best;
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* Builds the tree from the rooms of now (the first walk of a batch). Returns 0 or -ENOMEM. */
static int build_bounds(struct gw_spill *w)
{
    w->nblocks = (w->npoints + GW_SPILL_BLOCK - 1) / GW_SPILL_BLOCK;
    w->leaves = 1;
    while (w->leaves < w->nblocks)
        w->leaves *= 2;
    w->bound = malloc(2 * w->leaves * sizeof(*w->bound));
    w->block_first = malloc((w->nblocks ? w->nblocks : 1) * sizeof(*w->block_first));
    if (!w->bound || !w->block_first)
        return -ENOMEM;
    for (size_t b = 0; b < w->nblocks; b++)
        w->block_first[b] = w->points[b * GW_SPILL_BLOCK].value;
    for (size_t b = 0; b < w->leaves; b++)
        w->bound[w->leaves + b] = b < w->nblocks ? block_room(w, b) : INT64_MIN;
    for (size_t i = w->leaves - 1; i >= 1; i--)
        w->bound[i] = max64(w->bound[2 * i], w->bound[2 * i + 1]);
    return 0;
}

/* Lowers block b's bound to its room now, and its ancestors as far as they change. */
static void correct_block(struct gw_spill *w, size_t b)
{
    size_t i = w->leaves + b;
    int64_t now = block_room(w, b);
    assert(now <= w->bound[i]); /* loads only grow within a batch */
    w->bound[i] = now;
    for (i /= 2; i >= 1; i /= 2) {
        int64_t m = max64(w->bound[2 * i], w->bound[2 * i + 1]);
        if (w->bound[i] == m)
            break;
        w->bound[i] = m;
    }
}

/* The first block >= b whose bound is >= need, or SIZE_MAX. */
static size_t first_block(const struct gw_spill *w, size_t b, int64_t need)
{
    size_t i = w->leaves + b;
    while (w->bound[i] < need) {
        while (i & 1) /* a right child: its right neighbours are those of its parent */
            i /= 2;
        if (i == 0)
            return SIZE_MAX;
        i++;
    }
    while (i < w->leaves)
        i = w->bound[2 * i] >= need ? 2 * i : 2 * i + 1;
    return i - w->leaves;
}

/* The first point in [lo, hi) whose shard is not `home` and has room for `size`, or -1. A
 * block scanned to its end without one had a stale bound: it is corrected. */
static long find_in(struct gw_spill *w, size_t lo, size_t hi, uint64_t size, uint32_t home)
{
    while (lo < hi) {
        size_t b = first_block(w, lo / GW_SPILL_BLOCK, (int64_t)size);
        if (b == SIZE_MAX || b * GW_SPILL_BLOCK >= hi)
            return -1;
        size_t start = lo > b * GW_SPILL_BLOCK ? lo : b * GW_SPILL_BLOCK;
        size_t block_end =
            (b + 1) * GW_SPILL_BLOCK < w->npoints ? (b + 1) * GW_SPILL_BLOCK : w->npoints;
        size_t end = block_end < hi ? block_end : hi;
        for (size_t q = start; q < end; q++) {
            uint32_t s = shard_at(w, q);
            if (s != home && fits(w, s, size))
                return (long)q;
        }
        if (end == block_end)
            correct_block(w, b);
        lo = end;
    }
    return -1;
}

/* The index of the home point: the first point >= the key hash, point 0 after a wrap. The
 * search runs over the blocks' first values (a small array), then inside one block. */
static size_t home_index(const struct gw_spill *w, const struct ring_placement *p)
{
    if (p->wrapped)
        return 0;
    size_t lo = 0, hi = w->nblocks; /* the first block whose first value is >= the hash */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->block_first[mid] < p->hash)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t q = lo ? (lo - 1) * GW_SPILL_BLOCK : 0; /* the hash's point is in block lo - 1 or lo */
    while (q < w->npoints && w->points[q].value < p->hash)
        q++;
    assert(q < w->npoints && w->points[q].value == p->point);
    return q;
}

/* Rule 2: clockwise from the point after home, past the last point on to point 0. */
static long walk(struct gw_spill *w, size_t home, uint64_t size, uint32_t h)
{
    long q = find_in(w, home + 1, w->npoints, size, h);
    if (q < 0)
        q = find_in(w, 0, home, size, h);
    return q;
}

int gw_spill_place(struct gw_spill *w, struct ring_placement *p, uint64_t size, uint32_t *home)
{
    uint32_t h = p->shard;
    *home = GW_SPILL_NO_HOME;
    if (fits(w, h, size)) {
        w->load[h] += size;
        return 0;
    }
    if (!w->bound && build_bounds(w) != 0)
        return -ENOMEM;
    long q = walk(w, home_index(w, p), size, h);
    if (q < 0) { /* rule 3: no room anywhere; home takes it, over capacity */
        w->load[h] += size;
        return 0;
    }
    struct ring_point at = ring_point_at(w->ring, (size_t)q);
    assert(at.shard != h);
    p->point = at.value;
    p->vnode = at.vnode;
    p->shard = at.shard;
    w->load[at.shard] += size;
    *home = h;
    return 1;
}
