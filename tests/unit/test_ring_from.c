/* libring's incremental build (docs/decisions.md §6): a ring built from the previous one with
 * ring_build_from equals, byte for byte (points, buckets, coarse buckets, padding, shards, id),
 * the ring built from scratch, over hundreds of random membership changes of each kind: shards
 * added, removed, weights changed, shards leaving and rejoining the online set, and mixes. */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "ring_internal.h"

/* xorshift64*: the same pairs on every run, so a failure names a reproducible case. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 2685821657736338717ULL) >> 33) % n;
}

#define POOL_MAX 2048

/* A pool of shards, each online or not: a membership as the ring sees it. */
struct pool {
    char ids[POOL_MAX][24];
    uint32_t weight[POOL_MAX];
    int online[POOL_MAX];
    size_t n;
};

static void pool_add(struct pool *p, uint32_t max_weight)
{
    if (p->n == POOL_MAX)
        return;
    /* ids of varied lengths, some a prefix of another ("s-12" and "s-123") */
    snprintf(p->ids[p->n], sizeof(p->ids[p->n]), "s-%u", (unsigned)p->n * 7 + rnd(7));
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->ids[i], p->ids[p->n]) == 0)
            return; /* taken: no shard this time */
    p->weight[p->n] = 1 + rnd(max_weight);
    p->online[p->n++] = 1;
}

static size_t online_list(const struct pool *p, struct ring_shard *out)
{
    size_t k = 0;
    for (size_t i = 0; i < p->n; i++)
        if (p->online[i])
            out[k++] = (struct ring_shard){p->ids[i], strlen(p->ids[i]), p->weight[i]};
    return k;
}

enum change { ADD, REMOVE, WEIGHT, STATE, MIXED, KINDS };
static const char *const kind_names[] = {"add", "remove", "weight", "state", "mixed"};

/* One random change of `kind` to the pool; at least one online shard stays. */
static void change(struct pool *p, enum change kind)
{
    enum change k = kind == MIXED ? (enum change)rnd(4) : kind;
    uint32_t times = kind == MIXED ? 2 + rnd(6) : 1 + rnd(3);
    for (uint32_t t = 0; t < times; t++, k = kind == MIXED ? (enum change)rnd(4) : kind) {
        size_t i = rnd((uint32_t)p->n);
        if (k == ADD) {
            pool_add(p, 4);
        } else if (k == REMOVE && p->n > 2) { /* gone from the membership */
            memmove(p->ids[i], p->ids[i + 1], (p->n - i - 1) * sizeof(p->ids[0]));
            memmove(&p->weight[i], &p->weight[i + 1], (p->n - i - 1) * sizeof(p->weight[0]));
            memmove(&p->online[i], &p->online[i + 1], (p->n - i - 1) * sizeof(p->online[0]));
            p->n--;
        } else if (k == WEIGHT) { /* up or down, sometimes a lot */
            p->weight[i] = rnd(4) ? 1 + rnd(6) : 1 + rnd(RING_WEIGHT_MAX / 50);
        } else if (k == STATE) { /* draining or offline, or back online */
            p->online[i] = !p->online[i];
        }
    }
    struct ring_shard tmp[POOL_MAX];
    if (online_list(p, tmp) == 0)
        p->online[0] = 1;
}

static struct ring *build(const struct ring *prev, enum ring_digest d, uint32_t vnodes,
                          const struct pool *p)
{
    static struct ring_shard list[POOL_MAX];
    size_t n = online_list(p, list);
    struct ring *r;
    struct ring_error err;
    int rc = prev ? ring_build_from(&r, prev, d, vnodes, list, n, &err)
                  : ring_build(&r, d, vnodes, list, n, &err);
    if (rc != 0) {
        fprintf(stderr, "build: %s\n", err.msg);
        exit(2);
    }
    return r;
}

/* 1 when the two rings are the same bytes where it counts. */
static int same_ring(const struct ring *a, const struct ring *b)
{
    size_t nb = (size_t)1 << (32 - a->bucket_shift), nc = (size_t)1 << (32 - a->coarse_shift);
    if (a->npoints != b->npoints || a->nshards != b->nshards ||
        a->bucket_shift != b->bucket_shift || a->coarse_shift != b->coarse_shift ||
        strcmp(a->id, b->id) != 0)
        return 0;
    for (size_t i = 0; i < a->nshards; i++)
        if (strcmp(a->shards[i].id, b->shards[i].id) != 0 ||
            a->shards[i].weight != b->shards[i].weight)
            return 0;
    return memcmp(a->points, b->points, (a->npoints + RING_WINDOW) * sizeof(*a->points)) == 0 &&
           memcmp(a->buckets, b->buckets, (nb + 1) * sizeof(*a->buckets)) == 0 &&
           memcmp(a->coarse, b->coarse, (nc + 1) * sizeof(*a->coarse)) == 0;
}

/* PAIRS changes of each kind in chains: each ring is built from the previous incremental one
 * (so an error would also carry over) and compared with the ring built from scratch. */
static void test_random_changes(void)
{
    static const uint32_t vnodes[] = {1, 3, 40, 160};
    enum { PAIRS = 120, CHAIN = 6 };
    for (int kind = 0; kind < KINDS; kind++) {
        int same = 0;
        for (int c = 0; c < PAIRS / CHAIN; c++) {
            static struct pool p;
            p.n = 0;
            for (uint32_t s = 8 + rnd(40); s > 0; s--)
                pool_add(&p, 3);
            enum ring_digest d = rnd(2) ? RING_SHA1 : RING_MD5;
            uint32_t v = vnodes[rnd(4)];
            struct ring *prev = build(NULL, d, v, &p);
            for (int step = 0; step < CHAIN; step++) {
                change(&p, (enum change)kind);
                struct ring *inc = build(prev, d, v, &p), *full = build(NULL, d, v, &p);
                int ok = same_ring(inc, full);
                same += ok;
                CHECK_REPORT(ok,
                             "%s chain %d step %d: incremental ring differs (%zu vs %zu points)",
                             kind_names[kind], c, step, inc->npoints, full->npoints);
                ring_free(prev);
                ring_free(full);
                prev = inc;
            }
            ring_free(prev);
        }
        CHECK_EQ_U64(same, PAIRS);
    }
}

/* A different digest or vnodes reuses nothing and still gives the ring from scratch; so does a
 * change that replaces most shards (built from scratch inside). */
static void test_nothing_to_reuse(void)
{
    static struct pool p, q;
    p.n = q.n = 0;
    for (int s = 0; s < 30; s++)
        pool_add(&p, 3);
    struct ring *a = build(NULL, RING_SHA1, 40, &p);
    struct ring *md5 = build(a, RING_MD5, 40, &p), *md5_full = build(NULL, RING_MD5, 40, &p);
    struct ring *v7 = build(a, RING_SHA1, 7, &p), *v7_full = build(NULL, RING_SHA1, 7, &p);
    CHECK_TRUE(same_ring(md5, md5_full));
    CHECK_TRUE(same_ring(v7, v7_full));
    for (int s = 0; s < 30; s++)
        pool_add(&q, 3);
    for (size_t i = 0; i < q.n; i++)
        q.ids[i][0] = 't'; /* no id in common */
    struct ring *other = build(a, RING_SHA1, 40, &q), *other_full = build(NULL, RING_SHA1, 40, &q);
    CHECK_TRUE(same_ring(other, other_full));
    struct ring *same = build(a, RING_SHA1, 40, &p);
    CHECK_TRUE(same_ring(same, a));
    ring_free(a);
    ring_free(md5);
    ring_free(md5_full);
    ring_free(v7);
    ring_free(v7_full);
    ring_free(other);
    ring_free(other_full);
    ring_free(same);
}

/* A big ring (2,000 x 160: 320,000 points, the two-thread build): one shard offline, two
 * weights up, one shard added. */
static void test_big_ring(void)
{
    static struct pool p;
    p.n = 0;
    while (p.n < 2000)
        pool_add(&p, 1);
    struct ring *a = build(NULL, RING_SHA1, 160, &p);
    p.online[3] = 0;
    p.weight[10] = 2;
    p.weight[11] = 3;
    pool_add(&p, 1);
    struct ring *inc = build(a, RING_SHA1, 160, &p), *full = build(NULL, RING_SHA1, 160, &p);
    CHECK_TRUE(same_ring(inc, full));
    CHECK_EQ_U64(inc->npoints, (2000 - 1 + 1 + 2 + 1) * (size_t)160);
    ring_free(a);
    ring_free(inc);
    ring_free(full);
}

int main(void)
{
    test_random_changes();
    test_nothing_to_reuse();
    test_big_ring();
    return CHECK_DONE();
}
