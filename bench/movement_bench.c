/* Movement against the optimum (docs/performance.md §21): for 10, 100 and 10,000 shards of
 * weight 1 and each change — one shard added (its id last), the first, middle or last taken
 * out, the middle one at weight 2 — the share of keys that change shard under ketama (exact,
 * over the 2^32 hash values by arcs), a Maglev table of the next prime >= 100 slots a shard
 * (exact, over its slots), the jump placement of docs/contract.md §10 over 100 slots a shard
 * (exact, over its slots) and bare jump over the shards in id order (1,000,000 sampled keys),
 * next to the minimum: what the shards that own less afterwards lose (docs/contract.md §8),
 * for bare jump from its exact shares.
 * usage: movement_bench [--check]   (--check: 10 and 100 shards, and the rules asserted: ketama
 * and the jump placement move exactly the minimum) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

#define JUMP_KEYS 1000000

enum change { ADD, REMOVE_FIRST, REMOVE_MIDDLE, REMOVE_LAST, WEIGHT, CHANGES };
static const char *const change_names[CHANGES] = {"add one", "remove first", "remove middle",
                                                  "remove last", "weight x2"};
static int failures;

/* A membership: shards in id order; gid[k] names shard k across both memberships (0..n). */
struct members {
    struct ring_shard s[10001];
    uint32_t gid[10001];
    size_t n;
};

static char ids[10001][32];

static void members_of(size_t n, enum change c, int after, struct members *m)
{
    m->n = 0;
    for (size_t i = 0; i < n; i++) {
        int gone = after && ((c == REMOVE_FIRST && i == 0) || (c == REMOVE_MIDDLE && i == n / 2) ||
                             (c == REMOVE_LAST && i == n - 1));
        if (gone)
            continue;
        uint32_t w = after && c == WEIGHT && i == n / 2 ? 2 : 1;
        m->s[m->n] = (struct ring_shard){ids[i], strlen(ids[i]), w};
        m->gid[m->n++] = (uint32_t)i;
    }
    if (after && c == ADD) { /* "shard-new" sorts after every "shard-NNNNN" */
        m->s[m->n] = (struct ring_shard){ids[n], strlen(ids[n]), 1};
        m->gid[m->n++] = (uint32_t)n;
    }
}

/* The tally of one comparison: values (or slots, or keys) owned before and after by each gid. */
struct tally {
    uint64_t before[10001], after[10001], moved, total;
};

static void count(struct tally *t, uint32_t a, uint32_t b, uint64_t len)
{
    t->before[a] += len;
    t->after[b] += len;
    t->moved += a != b ? len : 0;
    t->total += len;
}

static uint64_t minimum(const struct tally *t, size_t n)
{
    uint64_t lost = 0;
    for (size_t i = 0; i <= n; i++)
        lost += t->before[i] > t->after[i] ? t->before[i] - t->after[i] : 0;
    return lost;
}

static struct ring *ketama(const struct members *m)
{
    struct ring *r;
    struct ring_error err;
    if (ring_build(&r, RING_SHA1, 160, m->s, m->n, &err) != 0) {
        fprintf(stderr, "ring_build: %s\n", err.msg);
        exit(1);
    }
    return r;
}

/* The ring's shard k is members shard k: both are in id order. Every arc between distinct
 * point values of either ring counts whole (docs/contract.md §8). */
static void ketama_tally(const struct members *ma, const struct members *mb, struct tally *t)
{
    struct ring *a = ketama(ma), *b = ketama(mb);
    const struct ring_point *pa = ring_points(a), *pb = ring_points(b);
    size_t na = ring_points_total(a), nb = ring_points_total(b), i = 0, j = 0;
    uint64_t start = 0;
    while (i < na || j < nb) {
        uint32_t c = j >= nb || (i < na && pa[i].value <= pb[j].value) ? pa[i].value : pb[j].value;
        count(t, ma->gid[(i < na ? pa[i] : pa[0]).shard], mb->gid[(j < nb ? pb[j] : pb[0]).shard],
              (uint64_t)c - start + 1);
        start = (uint64_t)c + 1;
        while (i < na && pa[i].value == c)
            i++;
        while (j < nb && pb[j].value == c)
            j++;
    }
    if (start <= UINT32_MAX)
        count(t, ma->gid[pa[0].shard], mb->gid[pb[0].shard], (UINT64_C(1) << 32) - start);
    ring_free(a);
    ring_free(b);
}

static uint32_t prime_at_least(uint32_t v)
{
    while (!ring_maglev_prime(v))
        v++;
    return v;
}

static void maglev_tally(const struct members *ma, const struct members *mb, size_t n,
                         struct tally *t)
{
    uint32_t m = prime_at_least((uint32_t)(100 * n));
    uint32_t *a = malloc((size_t)m * sizeof(*a)), *b = malloc((size_t)m * sizeof(*b));
    if (!a || !b || ring_maglev_table(ma->s, ma->n, m, RING_SHA1, a) != 0 ||
        ring_maglev_table(mb->s, mb->n, m, RING_SHA1, b) != 0) {
        fprintf(stderr, "maglev table of %u slots failed\n", m);
        exit(1);
    }
    for (uint32_t s = 0; s < m; s++)
        count(t, ma->gid[a[s]], mb->gid[b[s]], 1);
    free(a);
    free(b);
}

/* The jump placement's tables (docs/contract.md §10), slot by slot: a slot holds 1/S of the
 * keys whatever the membership, so the slots that change owner are the share that moves. */
static void jump_slots_tally(const struct members *ma, const struct members *mb, size_t n,
                             struct tally *t)
{
    uint32_t slots = (uint32_t)(100 * n);
    struct ring *a, *b;
    struct ring_error err;
    if (ring_build_jump(&a, RING_SHA1, slots, ma->s, ma->n, &err) != 0 ||
        ring_build_jump(&b, RING_SHA1, slots, mb->s, mb->n, &err) != 0) {
        fprintf(stderr, "jump ring of %u slots: %s\n", slots, err.msg);
        exit(1);
    }
    /* both rings hold their shards in id order, as ma and mb do */
    const uint32_t *ta = ring_table(a), *tb = ring_table(b);
    for (uint32_t s = 0; s < slots; s++)
        count(t, ma->gid[ta[s]], mb->gid[tb[s]], 1);
    ring_free(a);
    ring_free(b);
}

static void jump_tally(const struct members *ma, const struct members *mb, struct tally *t)
{
    char key[32];
    for (int k = 0; k < JUMP_KEYS; k++) {
        int len = snprintf(key, sizeof(key), "key-%d", k);
        uint64_t h = ring_digest_u64(RING_SHA1, key, (size_t)len);
        count(t, ma->gid[ring_jump(h, (int32_t)ma->n)], mb->gid[ring_jump(h, (int32_t)mb->n)], 1);
    }
}

/* Σ max(0, 1/|A| - 1/|B| if the shard stays), each bucket of jump owning 1/n exactly. */
static double jump_minimum(const struct members *a, const struct members *b)
{
    double lost = 0;
    for (size_t i = 0, j = 0; i < a->n; i++) {
        while (j < b->n && b->gid[j] < a->gid[i])
            j++;
        double after = j < b->n && b->gid[j] == a->gid[i] ? 1.0 / (double)b->n : 0.0;
        lost += 1.0 / (double)a->n > after ? 1.0 / (double)a->n - after : 0.0;
    }
    return lost;
}

/* `least`: the minimum as a share, when it is not the tally's own (jump's, whose sampled
 * columns carry the sampling's noise: each of its buckets owns exactly 1/n of the keys). */
static void row(size_t n, enum change c, const char *algo, const struct tally *t, double least)
{
    double moved = (double)t->moved / (double)t->total;
    double min = least >= 0 ? least : (double)minimum(t, n) / (double)t->total;
    printf("| %zu | %s | %s | %.6f | %.6f | %.2f |\n", n, change_names[c], algo, moved, min,
           moved / min);
    if (least < 0 && t->moved < minimum(t, n)) {
        printf("FAILED: %s moved less than the minimum\n", algo);
        failures++;
    }
}

int main(int argc, char **argv)
{
    int check = argc == 2 && strcmp(argv[1], "--check") == 0;
    if (argc > 1 && !check) {
        fprintf(stderr, "usage: movement_bench [--check]\n");
        return 64;
    }
    static const size_t sizes[] = {10, 100, 10000};
    static struct members ma, mb;
    static struct tally t;
    printf("| shards | change | algorithm | moved | minimum | moved / minimum |\n"
           "|---|---|---|---|---|---|\n");
    for (size_t z = 0; z < (check ? 2 : 3); z++) {
        size_t n = sizes[z];
        for (size_t i = 0; i < n; i++)
            snprintf(ids[i], sizeof(ids[i]), "shard-%05zu", i);
        snprintf(ids[n], sizeof(ids[n]), "shard-new");
        for (enum change c = 0; c < CHANGES; c++) {
            members_of(n, c, 0, &ma);
            members_of(n, c, 1, &mb);
            memset(&t, 0, sizeof(t));
            ketama_tally(&ma, &mb, &t);
            row(n, c, "ketama", &t, -1);
            if (check && c != WEIGHT && t.moved != minimum(&t, n)) {
                printf(
                    "FAILED: ketama moved more than the minimum on a shard added or taken out\n");
                failures++;
            }
            memset(&t, 0, sizeof(t));
            maglev_tally(&ma, &mb, n, &t);
            row(n, c, "maglev", &t, -1);
            memset(&t, 0, sizeof(t));
            jump_slots_tally(&ma, &mb, n, &t);
            row(n, c, "jump", &t, -1);
            if (check && t.moved != minimum(&t, n)) {
                printf("FAILED: the jump placement moved more than the minimum\n");
                failures++;
            }
            if (c == WEIGHT) { /* bare jump has buckets, not weights */
                printf("| %zu | %s | bare jump | - | - | no weights |\n", n, change_names[c]);
                continue;
            }
            memset(&t, 0, sizeof(t));
            jump_tally(&ma, &mb, &t);
            row(n, c, "bare jump", &t, jump_minimum(&ma, &mb));
        }
    }
    printf("movement_bench: %s\n", failures ? "FAILED" : "every algorithm at or above the minimum");
    return failures ? 1 : 0;
}
