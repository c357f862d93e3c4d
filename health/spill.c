/* Spill replay: a clockwise walk with a met set that jumps full shards by a union-find. */
#include "spill.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int hc_spill_grow(void **p, size_t n, size_t size)
{
    void *q = realloc(*p, (n ? n : 1) * size);
    if (q == NULL)
        return -ENOMEM;
    *p = q;
    return 0;
}

int hc_spill_reserve(struct hc_spill *s, size_t m, size_t n)
{
    if (m > s->cap_sh || s->load == NULL) {
        if (hc_spill_grow((void **)&s->load, m, sizeof *s->load) ||
            hc_spill_grow((void **)&s->seen, m, sizeof *s->seen))
            return -ENOMEM;
        s->cap_sh = m;
    }
    if (n + 1 > s->cap_pt || s->next == NULL) {
        if (hc_spill_grow((void **)&s->next, n + 1, sizeof *s->next))
            return -ENOMEM;
        s->cap_pt = n + 1;
    }
    return 0;
}

void hc_spill_free(struct hc_spill *s)
{
    free(s->load);
    free(s->seen);
    free(s->next);
    memset(s, 0, sizeof *s);
}

/* load + size <= capacity: the one test of rules 1 and 2. */
static int hc_fits(const struct hc_spill *s, const struct hc_membership *m, uint32_t shard,
                   uint64_t size)
{
    return s->load[shard] + size <= (uint64_t)m->shards[shard].capacity;
}

/* The first point >= i not known to belong to a full shard (n when none). */
static uint32_t hc_alive(struct hc_spill *s, uint32_t i)
{
    while (s->next[i] != i) {
        s->next[i] = s->next[s->next[i]];
        i = s->next[i];
    }
    return i;
}

/* Rule 2 over points [lo, hi): the first shard met, other than h and not met before in this
 * walk, with room. Full shards (no room for any size >= 1) are jumped over for size >= 1. */
static long hc_walk_range(struct hc_spill *s, const struct hc_ring *ring,
                          const struct hc_membership *m, uint32_t lo, uint32_t hi, uint32_t h,
                          uint64_t size)
{
    for (uint32_t j = size ? hc_alive(s, lo) : lo; j < hi; j = size ? hc_alive(s, j + 1) : j + 1) {
        uint32_t t = ring->points[j].shard;
        if (size && !hc_fits(s, m, t, 1)) {
            s->next[j] = j + 1; /* full for the rest of the batch: loads only grow */
            continue;
        }
        if (t == h || s->seen[t] == s->walks)
            continue;
        s->seen[t] = s->walks;
        if (hc_fits(s, m, t, size))
            return (long)j;
    }
    return -1;
}

/* The index of the home point: the first point >= hash, 0 after a wrap. */
static uint32_t hc_home_index(const struct hc_ring *ring, uint32_t hash, int wrap)
{
    if (wrap)
        return 0;
    size_t lo = 0, hi = ring->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ring->points[mid].value < hash)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (uint32_t)lo;
}

static void hc_spill_start(struct hc_spill *s, const struct hc_ring *ring,
                           const struct hc_membership *m)
{
    memset(s->load, 0, m->n * sizeof *s->load); /* every load starts at 0 for each batch */
    memset(s->seen, 0, m->n * sizeof *s->seen);
    s->walks = 0;
    for (uint32_t j = 0; j <= (uint32_t)ring->n; j++)
        s->next[j] = j;
}

uint64_t hc_spill_replay(struct hc_spill *s, const struct hc_ring *ring,
                         const struct hc_membership *m, const struct hc_receipt *r,
                         const uint32_t *hash, struct hc_hit *hit, long *home)
{
    uint64_t spilled = 0;
    hc_spill_start(s, ring, m);
    for (size_t i = 0; i < r->n_pl; i++) {
        uint32_t h = hit[i].shard;
        uint64_t size = (uint64_t)r->pl[i].size;
        home[i] = -1;
        if (!hc_fits(s, m, h, size)) {
            uint32_t at = hc_home_index(ring, hash[i], hit[i].wrap);
            s->walks++;
            long j = hc_walk_range(s, ring, m, at + 1, (uint32_t)ring->n, h, size);
            if (j < 0)
                j = hc_walk_range(s, ring, m, 0, at, h, size);
            if (j >= 0) { /* else rule 3: it stays home, over capacity */
                const struct hc_point *p = &ring->points[j];
                hit[i] = (struct hc_hit){p->value, p->shard, p->vnode, 0};
                home[i] = (long)h;
                spilled++;
            }
        }
        s->load[hit[i].shard] += size;
    }
    return spilled;
}
