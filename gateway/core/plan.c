/* The movement plan (docs/contract.md §8): one walk over the merged sorted points of both rings
 * (ring/walk.h), every arc counted whole: O(P_from + P_to) after the rings are built. The walk
 * keeps the runs of moved arcs (a few hundred for a one-shard change), which an LSD radix sort on
 * (from, to) orders: no comparison sort. */
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE, as ring/build.c */
#include "plan.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "walk.h"

/* The walk over both rings: before, after, moved points, and the runs of moved arcs in hash
 * order (a run is consecutive moved arcs of one (from, to) pair). */
struct walk {
    const uint32_t *a_owner, *b_owner; /* ring shard -> plan shard, of each ring */
    uint64_t *before, *after;          /* per plan shard */
    uint64_t moved;
    struct gw_plan_pair pending; /* the run not yet emitted (moved_points 0: none) */
    struct gw_plan_pair *runs;
    size_t run_count, run_cap;
    int failed;                   /* out of memory while growing runs or ranges */
    struct gw_plan_range *ranges; /* NULL unless the plan lists its ranges */
    size_t range_count, range_cap;
};

#define RADIX_BITS 11
#define RADIX_BUCKETS (1u << RADIX_BITS)

static int id_compare(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    return c ? c : (alen > blen) - (alen < blen);
}

static int no_memory(struct gw_error *err)
{
    gw_error_set(err, "", "out of memory");
    return -ENOMEM;
}

/* Fills p->shards with the ids of both memberships (each already in id order) and the
 * member -> plan shard maps. */
static void merge_ids(const struct gw_membership *a, const struct gw_membership *b,
                      struct gw_plan *p, uint32_t *a_map, uint32_t *b_map)
{
    size_t i = 0, j = 0, n = 0;
    while (i < a->count || j < b->count) {
        const struct gw_shard *sa = i < a->count ? &a->shards[i] : NULL;
        const struct gw_shard *sb = j < b->count ? &b->shards[j] : NULL;
        int c = !sa ? 1 : !sb ? -1 : id_compare(sa->id, sa->id_len, sb->id, sb->id_len);
        const struct gw_shard *s = c <= 0 ? sa : sb;
        memcpy(p->shards[n].id, s->id, s->id_len + 1);
        p->shards[n].id_len = s->id_len;
        if (c <= 0)
            a_map[i++] = (uint32_t)n;
        if (c >= 0)
            b_map[j++] = (uint32_t)n;
        n++;
    }
    p->shard_count = n;
}

/* ring shard index -> plan shard index, through the topology's member_of. */
static uint32_t *ring_owner_map(const struct gw_topology *t, const uint32_t *member_map)
{
    size_t n = ring_shard_count(t->ring);
    uint32_t *map = malloc((n ? n : 1) * sizeof(*map));
    for (size_t k = 0; map && k < n; k++)
        map[k] = member_map[t->member_of[k]];
    return map;
}

static void *run_array(size_t n);

static void emit_run(struct walk *w)
{
    if (w->pending.moved_points == 0 || w->failed)
        return;
    if (w->run_count == w->run_cap) {
        size_t cap = w->run_cap ? 2 * w->run_cap : 256;
        struct gw_plan_pair *grown = run_array(cap);
        if (!grown) {
            w->failed = 1;
            return;
        }
        if (w->run_count)
            memcpy(grown, w->runs, w->run_count * sizeof(*grown));
        free(w->runs);
        w->runs = grown;
        w->run_cap = cap;
    }
    w->runs[w->run_count++] = w->pending;
}

/* A moved arc into the ranges: the last one grows when the arc continues it, pair and all. */
static void add_range(struct walk *w, uint64_t start, uint64_t len, uint32_t from, uint32_t to)
{
    struct gw_plan_range *last = w->range_count ? &w->ranges[w->range_count - 1] : NULL;
    if (last && last->hi == start && last->from == from && last->to == to) {
        last->hi += len;
        return;
    }
    if (w->range_count == w->range_cap) {
        size_t cap = 2 * w->range_cap;
        struct gw_plan_range *grown = realloc(w->ranges, cap * sizeof(*grown));
        if (!grown) {
            w->failed = 1;
            return;
        }
        w->ranges = grown;
        w->range_cap = cap;
    }
    w->ranges[w->range_count++] = (struct gw_plan_range){start, start + len, from, to};
}

static void count_arc(void *ctx, uint64_t start, uint64_t len, uint32_t shard_a, uint32_t shard_b)
{
    struct walk *w = ctx;
    uint32_t from = w->a_owner[shard_a], to = w->b_owner[shard_b];
    w->before[from] += len;
    w->after[to] += len;
    if (from == to)
        return;
    w->moved += len;
    if (w->ranges)
        add_range(w, start, len, from, to);
    struct gw_plan_pair *run = &w->pending;
    if (run->moved_points && run->from == from && run->to == to) {
        run->moved_points += len;
        return;
    }
    emit_run(w);
    *run = (struct gw_plan_pair){from, to, len};
}

/* Walks both rings' points in value order, counting each arc whole; two Maglev tables of one
 * size slot by slot, a slot an arc of length 1 (docs/contract.md §11). */
static void walk_arcs(struct walk *w, const struct ring *from, const struct ring *to)
{
    if (ring_algorithm_of(from) != RING_KETAMA) {
        const uint32_t *a = ring_table(from), *b = ring_table(to);
        for (uint32_t s = 0; s < ring_table_size(from); s++)
            count_arc(w, s, 1, a[s], b[s]);
    } else {
        ring_walk_pair(from, to, count_arc, w);
    }
    emit_run(w);
}

#define HUGE_PAGE (2u << 20)

/* malloc for the run arrays: 16 bytes per moved arc, ~50 MiB when a hash change moves every arc
 * of 10,000 x 160. From 2 MiB up it asks for transparent huge pages: a first touch of 4 KiB
 * pages cost ~10 us each on the test machine, 0.3-0.6 s for 50 MiB against ~20 ms in 2 MiB
 * pages (docs/performance.md §7). The memory is released with free(). */
static void *run_array(size_t n)
{
    size_t bytes = (n ? n : 1) * sizeof(struct gw_plan_pair);
    if (bytes < HUGE_PAGE)
        return malloc(bytes);
    void *p = NULL;
    bytes = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    if (posix_memalign(&p, HUGE_PAGE, bytes) != 0)
        return NULL;
    (void)madvise(p, bytes, MADV_HUGEPAGE); /* advice only: 4 KiB pages still work */
    return p;
}

static uint64_t pair_key(const struct gw_plan_pair *e, uint64_t shards)
{
    return (uint64_t)e->from * shards + e->to;
}

/* One stable pass of an LSD radix sort on the digit of pair_key at `shift`. Digits of 11 bits
 * keep the 2048 write streams in cache, where a bucket per shard (10,000) scatters at random. */
static void radix_pass(const struct gw_plan_pair *in, struct gw_plan_pair *out, size_t n,
                       uint64_t shards, unsigned shift)
{
    size_t start[RADIX_BUCKETS] = {0};
    for (size_t i = 0; i < n; i++)
        start[(pair_key(&in[i], shards) >> shift) & (RADIX_BUCKETS - 1)]++;
    size_t at = 0;
    for (size_t d = 0; d < RADIX_BUCKETS; d++) {
        size_t c = start[d];
        start[d] = at;
        at += c;
    }
    for (size_t i = 0; i < n; i++)
        out[start[(pair_key(&in[i], shards) >> shift) & (RADIX_BUCKETS - 1)]++] = in[i];
}

/* Sorts the runs by (from, to) and merges equal pairs; the result ends in p->pairs. */
static void sort_runs(struct gw_plan *p, struct gw_plan_pair *runs, size_t n)
{
    uint64_t shards = p->shard_count, top = shards * shards;
    struct gw_plan_pair *in = runs, *out = p->pairs;
    for (unsigned shift = 0; shift < 64 && (top >> shift) != 0; shift += RADIX_BITS) {
        radix_pass(in, out, n, shards, shift);
        struct gw_plan_pair *t = in;
        in = out;
        out = t;
    }
    if (in != p->pairs)
        memcpy(p->pairs, in, n * sizeof(*in));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        struct gw_plan_pair *e = &p->pairs[i];
        if (k && p->pairs[k - 1].from == e->from && p->pairs[k - 1].to == e->to)
            p->pairs[k - 1].moved_points += e->moved_points;
        else
            p->pairs[k++] = *e;
    }
    p->pair_count = k;
}

/* Sorts the walk's runs into p->pairs. */
static int collect_pairs(struct gw_plan *p, struct walk *w)
{
    if (w->failed)
        return -ENOMEM;
    p->pairs = run_array(w->run_count);
    if (!p->pairs)
        return -ENOMEM;
    sort_runs(p, w->runs, w->run_count);
    return 0;
}

static void store_shares(struct gw_plan *p, const struct walk *w)
{
    for (size_t k = 0; k < p->shard_count; k++) {
        p->shards[k].before = w->before[k];
        p->shards[k].after = w->after[k];
    }
    p->moved_points = w->moved;
}

static int check_rings(const struct gw_topology *from, const struct gw_topology *to,
                       struct gw_error *err)
{
    const struct gw_contract *a = &from->contract, *b = &to->contract;
    if (a->algorithm != b->algorithm || a->table != b->table) {
        gw_error_set(err, "",
                     "plan: no plan between two algorithms or between tables of two sizes: "
                     "their places share no unit of the hash space (docs/contract.md §11)");
        return -EINVAL;
    }
    const char *empty = ring_shard_count(from->ring) == 0 ? "from"
                        : ring_shard_count(to->ring) == 0 ? "to"
                                                          : NULL;
    if (!empty)
        return 0;
    gw_error_set(err, "", "plan: %s ring has no online shard", empty);
    return -ENOENT;
}

static void copy_names(struct gw_plan *p, const struct gw_topology *from,
                       const struct gw_topology *to)
{
    memcpy(p->from_epoch, from->epoch, sizeof(p->from_epoch));
    memcpy(p->to_epoch, to->epoch, sizeof(p->to_epoch));
    memcpy(p->from_ring, ring_id(from->ring), sizeof(p->from_ring));
    memcpy(p->to_ring, ring_id(to->ring), sizeof(p->to_ring));
}

/* Both walks, once the id maps exist. */
static int plan_arcs(struct gw_plan *p, const struct gw_topology *from,
                     const struct gw_topology *to, const uint32_t *a_map, const uint32_t *b_map)
{
    size_t n = p->shard_count + 1;
    struct walk w = {
        .a_owner = ring_owner_map(from, a_map),
        .b_owner = ring_owner_map(to, b_map),
        .before = calloc(n, sizeof(uint64_t)),
        .after = calloc(n, sizeof(uint64_t)),
        .ranges = p->has_ranges ? malloc(256 * sizeof(struct gw_plan_range)) : NULL,
        .range_cap = 256,
    };
    int rc = -ENOMEM;
    if (w.a_owner && w.b_owner && w.before && w.after && (w.ranges || !p->has_ranges)) {
        walk_arcs(&w, from->ring, to->ring);
        store_shares(p, &w);
        rc = collect_pairs(p, &w);
    }
    p->ranges = w.ranges; /* freed by gw_plan_free */
    p->range_count = w.range_count;
    free(w.runs);
    free(w.before);
    free(w.after);
    free((void *)w.a_owner);
    free((void *)w.b_owner);
    return rc;
}

int gw_plan_compute(const struct gw_topology *from, const struct gw_topology *to, int ranges,
                    struct gw_plan *out, struct gw_error *err)
{
    memset(out, 0, sizeof(*out));
    out->has_ranges = ranges;
    int rc = check_rings(from, to, err);
    if (rc != 0)
        return rc;
    copy_names(out, from, to);
    out->space =
        from->contract.algorithm == RING_KETAMA ? GW_PLAN_HASH_SPACE : from->contract.table;
    size_t total = from->members.count + to->members.count;
    out->shards = calloc(total ? total : 1, sizeof(*out->shards));
    uint32_t *a_map = malloc((from->members.count + 1) * sizeof(*a_map));
    uint32_t *b_map = malloc((to->members.count + 1) * sizeof(*b_map));
    rc = -ENOMEM;
    if (out->shards && a_map && b_map) {
        merge_ids(&from->members, &to->members, out, a_map, b_map);
        rc = plan_arcs(out, from, to, a_map, b_map);
    }
    free(a_map);
    free(b_map);
    if (rc != 0) {
        gw_plan_free(out);
        return no_memory(err);
    }
    for (size_t i = 0; i < out->shard_count; i++)
        if (out->shards[i].before > out->shards[i].after)
            out->minimum_points += out->shards[i].before - out->shards[i].after;
    assert(out->minimum_points <= out->moved_points && out->moved_points <= out->space);
    return 0;
}

void gw_plan_add_change(struct gw_plan *p, const struct gw_topology *from,
                        const struct gw_topology *to, const char *key, size_t key_len,
                        uint64_t size)
{
    struct ring_placement a, b;
    int rc = ring_lookup(from->ring, key, key_len, &a);
    rc |= ring_lookup(to->ring, key, key_len, &b);
    assert(rc == 0); /* gw_plan_compute refused empty rings */
    (void)rc;
    p->has_journal = 1;
    p->changes++;
    if (id_compare(ring_shard_id(from->ring, a.shard), ring_shard_id_len(from->ring, a.shard),
                   ring_shard_id(to->ring, b.shard), ring_shard_id_len(to->ring, b.shard))) {
        p->moved_changes++;
        p->moved_load += size;
    }
}

double gw_plan_fraction(const struct gw_plan *p)
{
    return (double)p->moved_points / (double)p->space;
}

double gw_plan_minimum_fraction(const struct gw_plan *p)
{
    return (double)p->minimum_points / (double)p->space;
}

void gw_plan_free(struct gw_plan *p)
{
    free(p->shards);
    free(p->pairs);
    free(p->ranges);
    memset(p, 0, sizeof(*p));
}
