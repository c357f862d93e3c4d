/* libring's build: point generation, the two-thread radix sort into ring order, the buckets. */
#include "ring_internal.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define VNODE_LABEL_MAX (RING_ID_PREFIX_MAX + 1 + 10)

/* Writes the decimal form of `v` at `out`; returns its length. */
static size_t put_decimal(char *out, size_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

#define TOP_BITS 11 /* the one pass over the whole array: 2048 write streams */
#define TOP_GROUPS (1u << TOP_BITS)
#define LOCAL_BITS 7 /* then three passes of 7 bits within each top group (in L1) */

size_t ring__shard_points(const struct ring *ring, uint32_t rank, size_t from,
                          struct ring_point *out)
{
    const struct ring_shard_slot *s = &ring->shards[rank];
    size_t words = ring__digest_len(ring->digest) / 4;
    size_t count = (size_t)ring->vnodes * s->weight;
    char label[VNODE_LABEL_MAX + 10];
    uint32_t w[5];
    memcpy(label, s->id, s->id_len);
    label[s->id_len] = '-';
    size_t k = from;
    for (size_t g = from / words; k < count; g++) {
        size_t n = put_decimal(label + s->id_len + 1, g);
        ring__digest_words(ring->digest, label, s->id_len + 1 + n, w);
        for (size_t j = k % words; j < words && k < count; j++, k++)
            out[k - from] = (struct ring_point){w[j], rank, (uint32_t)k};
    }
    return count > from ? count - from : 0;
}

/* Appends the points of shard `rank` in vnode order to `out` and counts them by their top
 * TOP_BITS bits in `top`; returns how many. */
static size_t shard_points(const struct ring *ring, uint32_t rank, struct ring_point *out,
                           uint32_t *top)
{
    size_t count = ring__shard_points(ring, rank, 0, out);
    for (size_t k = 0; k < count; k++)
        top[out[k].value >> (32 - TOP_BITS)]++;
    return count;
}

/* The sort of the ring order (docs/contract.md "The ring") is a stable radix sort by value: one MSD
 * pass by the top 11 bits into a scratch array, then an LSD sort of each group (about 800 points at
 * 10,000 shards: it stays in L1) by the low 21 bits back into the points. Only the first pass
 * scatters across the whole array, and to 2048 streams, which the write-combining buffers and the
 * TLB can follow; two global 16-bit passes (65536 streams) cost three times as much. The points are
 * generated in (shard id, vnode) order, so stability yields exactly the (value, shard id,
 * vnode) order of the contract.
 *
 * Big rings are built by two threads, each doing one half of every step: point generation
 * (shards split by point count), the MSD scatter (each half of the generated points goes to
 * its own offsets in each group, the first half's before the second's, so the scatter stays
 * stable), and the group sorts (groups split by point count), each followed by the bucket
 * starts of that group while it is in cache. The halves write disjoint ranges, the join after
 * each step orders them, and the result does not depend on the split. */
#define PARALLEL_MIN_POINTS ((size_t)1 << 16) /* below this, a thread costs more than it saves */

struct build_half {
    struct ring *ring;
    uint32_t rank_lo, rank_hi;   /* shards [rank_lo, rank_hi) */
    size_t at, made;             /* its points start at `at`; `made` were generated */
    uint32_t top[TOP_GROUPS];    /* step 1: top-bits counts; step 2: scatter offsets */
    struct ring_point *tmp;      /* the MSD scatter's output, shared */
    const uint32_t *group_end;   /* group_end[g]: end of top group g in tmp, shared */
    uint32_t group_lo, group_hi; /* top groups [group_lo, group_hi) are theirs to sort */
    struct ring_point *scratch;  /* 2 * most points */
    size_t most;
};

static void *half_generate(void *arg)
{
    struct build_half *h = arg;
    h->made = 0;
    for (uint32_t rank = h->rank_lo; rank < h->rank_hi; rank++)
        h->made += shard_points(h->ring, rank, h->ring->points + h->at + h->made, h->top);
    return NULL;
}

static void *half_scatter(void *arg)
{
    struct build_half *h = arg;
    const struct ring_point *src = h->ring->points + h->at;
    for (size_t i = 0; i < h->made; i++)
        h->tmp[h->top[src[i].value >> (32 - TOP_BITS)]++] = src[i];
    return NULL;
}

/* One stable counting-sort pass of `n` points from `src` to `dst` by `bits` bits of the value
 * from `shift`, with `count` holding the digits' starts in dst. */
static void counting_pass(const struct ring_point *src, struct ring_point *dst, size_t n,
                          unsigned shift, unsigned bits, uint32_t *count)
{
    uint32_t mask = (1u << bits) - 1;
    for (size_t i = 0; i < n; i++)
        dst[count[(src[i].value >> shift) & mask]++] = src[i];
}

/* Exclusive prefix sums of `size` counts. */
static void prefix_sum(uint32_t *count, size_t size, uint32_t sum)
{
    for (size_t d = 0; d < size; d++) {
        uint32_t c = count[d];
        count[d] = sum;
        sum += c;
    }
}

/* A small group, stably by value: what the three counting passes give, without zeroing and
 * summing their 3 x 128 counts (a ring of a few shards leaves most of the 2048 groups empty). */
static void insertion_sort(const struct ring_point *src, struct ring_point *dst, size_t m)
{
    for (size_t i = 0; i < m; i++) {
        size_t j = i;
        while (j > 0 && dst[j - 1].value > src[i].value) {
            dst[j] = dst[j - 1];
            j--;
        }
        dst[j] = src[i];
    }
}

/* Sorts one top group of m points from `src` into `dst` by the low 21 bits of the value. */
static void sort_group(const struct ring_point *src, struct ring_point *dst, size_t m,
                       struct ring_point *s1, struct ring_point *s2)
{
    if (m <= 32) {
        insertion_sort(src, dst, m);
        return;
    }
    uint32_t count[3][1u << LOCAL_BITS] = {{0}};
    uint32_t mask = (1u << LOCAL_BITS) - 1;
    for (size_t i = 0; i < m; i++) {
        uint32_t v = src[i].value;
        count[0][v & mask]++;
        count[1][(v >> LOCAL_BITS) & mask]++;
        count[2][(v >> 2 * LOCAL_BITS) & mask]++;
    }
    for (int p = 0; p < 3; p++)
        prefix_sum(count[p], 1u << LOCAL_BITS, 0);
    counting_pass(src, s1, m, 0, LOCAL_BITS, count[0]);
    counting_pass(s1, s2, m, LOCAL_BITS, LOCAL_BITS, count[1]);
    counting_pass(s2, dst, m, 2 * LOCAL_BITS, LOCAL_BITS, count[2]);
}

/* Bucket bits: about four points per bucket, so a lookup reads one bucket slot and then
 * binary-searches a cache line or two instead of the whole array. */
static unsigned bucket_bits(size_t npoints)
{
    unsigned bits = 0;
    while (bits < 22 && ((size_t)1 << (bits + 2)) < npoints)
        bits++;
    return bits;
}

/* buckets[b] is the first point whose bucket (value >> bucket_shift) is >= b: the number of
 * points in the buckets before b. `points` are the sorted points [lo, lo + m) whose buckets
 * are [b0, b0 + nb); the starts of those nb buckets are written, by a histogram and its
 * prefix sum. */
static void fill_buckets(const struct ring *ring, const struct ring_point *points, size_t lo,
                         size_t m, size_t b0, size_t nb)
{
    uint32_t *starts = ring->buckets + b0;
    memset(starts, 0, nb * sizeof(*starts));
    for (size_t i = 0; i < m; i++)
        starts[((uint64_t)points[i].value >> ring->bucket_shift) - b0]++;
    prefix_sum(starts, nb, (uint32_t)lo);
}

static void *half_sort(void *arg)
{
    struct build_half *h = arg;
    struct ring *ring = h->ring;
    size_t per_group = (size_t)1 << (32 - ring->bucket_shift - TOP_BITS);
    for (uint32_t g = h->group_lo; g < h->group_hi; g++) {
        size_t lo = g ? h->group_end[g - 1] : 0, m = h->group_end[g] - lo;
        sort_group(h->tmp + lo, ring->points + lo, m, h->scratch, h->scratch + h->most);
        fill_buckets(ring, ring->points + lo, lo, m, g * per_group, per_group);
    }
    return NULL;
}

/* Runs fn(a) in a second thread and fn(b) in this one, or both here (also if the thread
 * cannot be created: the result is the same, only slower). */
static void run_halves(void *(*fn)(void *), struct build_half *a, struct build_half *b,
                       int parallel)
{
    pthread_t t;
    int spawned = parallel && pthread_create(&t, NULL, fn, a) == 0;
    if (!spawned)
        fn(a);
    fn(b);
    if (spawned)
        pthread_join(t, NULL);
}

/* What one build allocates besides the ring's own arrays, and the plan they follow. */
struct build_work {
    struct build_half *h;   /* the two halves */
    uint32_t *group_end;    /* TOP_GROUPS ends, shared by the halves */
    struct ring_point *tmp; /* the MSD scatter's output */
    size_t total, nb;       /* points planned; buckets (2^bits) */
    unsigned bits;          /* bucket bits */
    int parallel;           /* big enough for the helper thread */
};

int ring__alloc_arrays(struct ring *ring, size_t total, unsigned *bits_out)
{
    unsigned bits = bucket_bits(total);
    ring->bucket_shift = 32 - bits;
    unsigned coarse_bits = bits > RING_COARSE_FACTOR ? bits - RING_COARSE_FACTOR : 0;
    ring->coarse_shift = 32 - coarse_bits;
    ring->points_bytes = (total + RING_WINDOW) * sizeof(*ring->points);
    ring->buckets_bytes = (((size_t)1 << bits) + 1) * sizeof(*ring->buckets);
    ring->points = ring__big_alloc(ring->points_bytes);
    ring->buckets = ring__big_alloc(ring->buckets_bytes);
    ring->coarse = malloc((((size_t)1 << coarse_bits) + 1) * sizeof(*ring->coarse));
    *bits_out = bits;
    return ring->points && ring->buckets && ring->coarse ? 0 : -ENOMEM;
}

/* Counts the points, sizes the buckets and allocates every array of the build. Returns 0,
 * -EINVAL (more than UINT32_MAX points) or -ENOMEM; `w` is to be released by free_work. */
static int plan_build(struct ring *ring, struct build_work *w)
{
    for (size_t i = 0; i < ring->nshards; i++)
        w->total += (size_t)ring->vnodes * ring->shards[i].weight;
    if (w->total > UINT32_MAX)
        return -EINVAL;
    int rc = ring__alloc_arrays(ring, w->total, &w->bits);
    w->nb = (size_t)1 << w->bits;
    w->parallel = w->total >= PARALLEL_MIN_POINTS;
    w->h = calloc(2, sizeof(*w->h));
    w->group_end = malloc(TOP_GROUPS * sizeof(*w->group_end));
    w->tmp = ring__big_alloc(w->total * sizeof(*w->tmp));
    if (rc != 0 || !w->h || !w->group_end || !w->tmp)
        return -ENOMEM;
    for (int i = 0; i < 2; i++) {
        w->h[i].ring = ring;
        w->h[i].tmp = w->tmp;
        w->h[i].group_end = w->group_end;
    }
    return 0;
}

static void free_work(struct build_work *w)
{
    if (w->h) {
        free(w->h[0].scratch);
        free(w->h[1].scratch);
    }
    free(w->h);
    free(w->group_end);
    ring__big_free(w->tmp, w->total * sizeof(*w->tmp));
}

/* Step 1: generate and count the points, shards split in two halves by point count. */
static void generate_points(struct ring *ring, struct build_work *w)
{
    struct build_half *h = w->h;
    size_t half = 0;
    uint32_t split = 0;
    while (split < ring->nshards && 2 * half < w->total)
        half += (size_t)ring->vnodes * ring->shards[split++].weight;
    h[0].rank_lo = 0, h[0].rank_hi = split, h[0].at = 0;
    h[1].rank_lo = split, h[1].rank_hi = (uint32_t)ring->nshards, h[1].at = half;
    run_halves(half_generate, &h[0], &h[1], w->parallel);
    if (h[1].made && h[0].made != h[1].at) { /* fewer points than planned: close the gap */
        memmove(ring->points + h[0].made, ring->points + h[1].at,
                h[1].made * sizeof(*ring->points));
        h[1].at = h[0].made;
    }
    ring->npoints = h[0].made + h[1].made;
}

/* Step 2: each half's scatter offsets in each group, the first half's first, then the MSD
 * scatter. Returns the size of the biggest group. */
static size_t scatter_points(struct build_work *w)
{
    struct build_half *h = w->h;
    size_t most = 0;
    for (uint32_t g = 0, sum = 0; g < TOP_GROUPS; g++) {
        uint32_t c0 = h[0].top[g], c1 = h[1].top[g];
        h[0].top[g] = sum;
        h[1].top[g] = sum + c0;
        sum += c0 + c1;
        w->group_end[g] = sum;
        most = c0 + c1 > most ? c0 + c1 : most;
    }
    run_halves(half_scatter, &h[0], &h[1], w->parallel);
    return most;
}

/* Step 3: sort each group back into the points and fill its buckets. Returns 0 or -ENOMEM. */
static int sort_points(struct ring *ring, struct build_work *w, size_t most)
{
    struct build_half *h = w->h;
    uint32_t gsplit = 0;
    while (gsplit < TOP_GROUPS && 2 * (size_t)w->group_end[gsplit] < ring->npoints)
        gsplit++;
    h[0].group_lo = 0, h[0].group_hi = gsplit;
    h[1].group_lo = gsplit, h[1].group_hi = TOP_GROUPS;
    for (int i = 0; i < 2; i++) {
        h[i].most = most ? most : 1;
        h[i].scratch = malloc(2 * h[i].most * sizeof(*h[i].scratch));
    }
    if (!h[0].scratch || !h[1].scratch)
        return -ENOMEM;
    if (w->bits >= TOP_BITS) { /* each group owns whole buckets */
        run_halves(half_sort, &h[0], &h[1], w->parallel && gsplit < TOP_GROUPS);
    } else { /* a small ring */
        for (uint32_t g = 0; g < TOP_GROUPS; g++) {
            size_t lo = g ? w->group_end[g - 1] : 0;
            sort_group(w->tmp + lo, ring->points + lo, w->group_end[g] - lo, h[0].scratch,
                       h[0].scratch + h[0].most);
        }
        fill_buckets(ring, ring->points, 0, ring->npoints, 0, w->nb);
    }
    ring->buckets[w->nb] = (uint32_t)ring->npoints;
    return 0;
}

/* Step 4: the padding after the last point, and the coarse buckets: the first point whose
 * coarse bucket is >= c is the first whose bucket is >= c * 2^(bits - coarse bits). */
void ring__finish_points(struct ring *ring)
{
    for (size_t j = 0; j < RING_WINDOW; j++)
        ring->points[ring->npoints + j] = (struct ring_point){UINT32_MAX, 0, 0};
    unsigned factor = ring->coarse_shift - ring->bucket_shift;
    size_t nc = (size_t)1 << (32 - ring->coarse_shift);
    for (size_t c = 0; c <= nc; c++)
        ring->coarse[c] = ring->buckets[c << factor];
}

#ifndef NDEBUG
/* Debug builds check what the sort promises (docs/contract.md "The ring"): points strictly
 * ordered by (value, shard id, vnode); shard indexes are ranks in id order. */
static void check_ring_order(const struct ring *ring)
{
    for (size_t i = 1; i < ring->npoints; i++) {
        const struct ring_point *a = &ring->points[i - 1], *b = &ring->points[i];
        assert(a->value < b->value ||
               (a->value == b->value &&
                (a->shard < b->shard || (a->shard == b->shard && a->vnode < b->vnode))));
    }
}

/* Debug builds check what the bucket fill promises: the bucket starts rise from 0 to the
 * number of points, and each bucket's range holds exactly the points of that bucket; the
 * same for the coarse buckets; and the padding is in place. */
static void check_bucket_bounds(const struct ring *ring, size_t nb)
{
    assert(ring->buckets[0] == 0 && ring->buckets[nb] == ring->npoints);
    for (size_t b = 0; b < nb; b++) {
        assert(ring->buckets[b] <= ring->buckets[b + 1]);
        for (size_t i = ring->buckets[b]; i < ring->buckets[b + 1]; i++)
            assert(((uint64_t)ring->points[i].value >> ring->bucket_shift) == b);
    }
    for (size_t j = 0; j < RING_WINDOW; j++)
        assert(ring->points[ring->npoints + j].value == UINT32_MAX);
    size_t nc = (size_t)1 << (32 - ring->coarse_shift);
    assert(ring->coarse[0] == 0 && ring->coarse[nc] == ring->npoints);
    for (size_t c = 0; c < nc; c++)
        for (size_t i = ring->coarse[c]; i < ring->coarse[c + 1]; i++)
            assert(((uint64_t)ring->points[i].value >> ring->coarse_shift) == c);
}
#endif

void ring__check(const struct ring *ring)
{
#ifndef NDEBUG
    check_ring_order(ring);
    check_bucket_bounds(ring, (size_t)1 << (32 - ring->bucket_shift));
#else
    (void)ring;
#endif
}

int ring__build_points(struct ring *ring)
{
    struct build_work w = {0};
    int rc = plan_build(ring, &w);
    if (rc == 0) {
        generate_points(ring, &w);
        rc = sort_points(ring, &w, scatter_points(&w));
    }
    if (rc == 0)
        ring__finish_points(ring);
    if (rc == 0)
        ring__check(ring);
    free_work(&w);
    return rc;
}
