/* The movement plan (docs/contract.md §8): one walk over the merged sorted points of both rings.
 * Between two consecutive distinct point values the owner is constant in both rings, so every
 * arc is counted whole: O(P_from + P_to) after the rings are built, plus a two-pass counting
 * sort of the moved arcs by (from, to). */
#include "plan.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A cursor over one ring's points in ring order; `owner` maps ring shard -> plan shard. */
struct arc_cursor {
    const struct ring *ring;
    const uint32_t *owner;
    size_t n, i;
};

/* The moved arcs collected during the walk, then sorted and merged into pairs. */
struct moves {
    struct gw_plan_pair *items;
    size_t count;
};

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

static uint64_t cursor_value(const struct arc_cursor *c)
{
    return c->i < c->n ? ring_point_at(c->ring, c->i).value : GW_PLAN_HASH_SPACE;
}

/* The owner of every hash value above the previous point and up to cursor_value(): the first
 * point >= it, else point 0 (the wrap). */
static uint32_t cursor_owner(const struct arc_cursor *c)
{
    return c->owner[ring_point_at(c->ring, c->i < c->n ? c->i : 0).shard];
}

static void cursor_skip(struct arc_cursor *c, uint64_t value)
{
    while (c->i < c->n && ring_point_at(c->ring, c->i).value == value)
        c->i++;
}

static void count_arc(struct gw_plan *p, struct moves *m, uint32_t from, uint32_t to, uint64_t len)
{
    p->shards[from].before += len;
    p->shards[to].after += len;
    if (from == to || len == 0)
        return;
    p->moved_points += len;
    struct gw_plan_pair *last = m->count ? &m->items[m->count - 1] : NULL;
    if (last && last->from == from && last->to == to)
        last->moved_points += len;
    else
        m->items[m->count++] = (struct gw_plan_pair){from, to, len};
}

/* Walks both rings' points in value order, counting each arc [start, value] whole. */
static void walk_arcs(struct gw_plan *p, struct moves *m, struct arc_cursor *a,
                      struct arc_cursor *b)
{
    uint64_t start = 0;
    while (a->i < a->n || b->i < b->n) {
        uint64_t va = cursor_value(a), vb = cursor_value(b);
        uint64_t value = va < vb ? va : vb;
        count_arc(p, m, cursor_owner(a), cursor_owner(b), value - start + 1);
        start = value + 1;
        cursor_skip(a, value);
        cursor_skip(b, value);
    }
    /* Above the last point: both rings wrap to their point 0. */
    count_arc(p, m, cursor_owner(a), cursor_owner(b), GW_PLAN_HASH_SPACE - start);
}

/* One stable counting-sort pass of `in` into `out` by from (by_from) or to. */
static void counting_pass(const struct gw_plan_pair *in, struct gw_plan_pair *out, size_t n,
                          size_t *bucket, size_t buckets, int by_from)
{
    memset(bucket, 0, (buckets + 1) * sizeof(*bucket));
    for (size_t i = 0; i < n; i++)
        bucket[(by_from ? in[i].from : in[i].to) + 1]++;
    for (size_t k = 1; k <= buckets; k++)
        bucket[k] += bucket[k - 1];
    for (size_t i = 0; i < n; i++)
        out[bucket[by_from ? in[i].from : in[i].to]++] = in[i];
}

/* Sorts the moved arcs by (from, to) and merges equal pairs into p->pairs. */
static int make_pairs(struct gw_plan *p, struct moves *m)
{
    struct gw_plan_pair *tmp = malloc((m->count ? m->count : 1) * sizeof(*tmp));
    size_t *bucket = malloc((p->shard_count + 1) * sizeof(*bucket));
    if (!tmp || !bucket) {
        free(tmp);
        free(bucket);
        return -ENOMEM;
    }
    counting_pass(m->items, tmp, m->count, bucket, p->shard_count, 0);
    counting_pass(tmp, m->items, m->count, bucket, p->shard_count, 1);
    free(tmp);
    free(bucket);
    size_t n = 0;
    for (size_t i = 0; i < m->count; i++) {
        struct gw_plan_pair *e = &m->items[i];
        if (n && m->items[n - 1].from == e->from && m->items[n - 1].to == e->to)
            m->items[n - 1].moved_points += e->moved_points;
        else
            m->items[n++] = *e;
    }
    p->pairs = m->items;
    p->pair_count = n;
    m->items = NULL;
    return 0;
}

static int check_rings(const struct gw_topology *from, const struct gw_topology *to,
                       struct gw_error *err)
{
    const char *empty = ring_points_total(from->ring) == 0 ? "from"
                        : ring_points_total(to->ring) == 0 ? "to"
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

/* The walk itself, once the id maps exist. */
static int plan_arcs(struct gw_plan *p, const struct gw_topology *from,
                     const struct gw_topology *to, const uint32_t *a_map, const uint32_t *b_map)
{
    struct arc_cursor a = {from->ring, ring_owner_map(from, a_map), ring_points_total(from->ring),
                           0};
    struct arc_cursor b = {to->ring, ring_owner_map(to, b_map), ring_points_total(to->ring), 0};
    struct moves m = {malloc((a.n + b.n + 1) * sizeof(*m.items)), 0};
    int rc = -ENOMEM;
    if (a.owner && b.owner && m.items) {
        walk_arcs(p, &m, &a, &b);
        rc = make_pairs(p, &m);
    }
    free(m.items);
    free((void *)a.owner);
    free((void *)b.owner);
    return rc;
}

int gw_plan_compute(const struct gw_topology *from, const struct gw_topology *to,
                    struct gw_plan *out, struct gw_error *err)
{
    memset(out, 0, sizeof(*out));
    int rc = check_rings(from, to, err);
    if (rc != 0)
        return rc;
    copy_names(out, from, to);
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
    assert(out->moved_points <= GW_PLAN_HASH_SPACE);
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
    return (double)p->moved_points / (double)GW_PLAN_HASH_SPACE;
}

void gw_plan_free(struct gw_plan *p)
{
    free(p->shards);
    free(p->pairs);
    memset(p, 0, sizeof(*p));
}
