/* Ketama ring rebuild, independent of ring/: docs/contract.md §3, points by (value, id, vnode). */
/* For each online shard s, n = VNODES * weight points; digest g = H(id "-" g) yields points
 * k = g*W + j (j < W = digest/4 words) with value LE32(d[4j..]); lookup is the first point with
 * value >= hash, else point 0 ("wrap"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jump.h"
#include "maglev.h"
#include "ring.h"

static uint32_t hc_le32(const unsigned char *d)
{
    return (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24;
}

static const char *hc_digest_ossl_name(enum hc_hash h)
{
    return h == HC_HASH_MD5 ? "MD5" : "SHA1";
}

int hc_ring_id(const struct hc_contract *c, const struct hc_membership *m, char id[41],
               struct hc_err *err)
{
    struct hc_digest *d;
    int rc = hc_digest_open("SHA1", &d, err);
    if (rc != 0)
        return rc;
    char line[128];
    int len = snprintf(line, sizeof line, "%s\n%s\n%u\n", hc_ring_name(c->ring),
                       hc_hash_name(c->hash), hc_size(c));
    rc = hc_digest_begin(d);
    rc = rc ? rc : hc_digest_update(d, line, (size_t)len);
    for (size_t i = 0; rc == 0 && i < m->n; i++) {
        const struct hc_shard *s = &m->shards[i];
        if (s->state != HC_STATE_ONLINE)
            continue;
        len = snprintf(line, sizeof line, "%s %u\n", s->id, s->weight);
        rc = hc_digest_update(d, line, (size_t)len);
    }
    unsigned char out[HC_DIGEST_MAX];
    rc = rc ? rc : hc_digest_end(d, out);
    hc_digest_close(d);
    if (rc != 0)
        return hc_err_set(err, rc, "SHA-1 failed");
    hc_hex(out, 20, id);
    return 0;
}

/* Point order of docs/contract.md §3. Shard indices follow id order, so comparing them compares
 * ids. */
static int hc_point_cmp(const void *pa, const void *pb)
{
    const struct hc_point *a = pa, *b = pb;
    if (a->value != b->value)
        return a->value < b->value ? -1 : 1;
    if (a->shard != b->shard)
        return a->shard < b->shard ? -1 : 1;
    return (a->vnode > b->vnode) - (a->vnode < b->vnode);
}

/* The Maglev table of the online shards, by health's own hc_maglev_table; each entry turned from
 * an index among the online shards into one in the membership. */
static int hc_table_build(const struct hc_contract *c, const struct hc_membership *m,
                          struct hc_ring *r, struct hc_err *err)
{
    r->table_size = c->table;
    struct hc_maglev_shard *online = malloc((m->n ? m->n : 1) * sizeof *online);
    uint32_t *member = malloc((m->n ? m->n : 1) * sizeof *member);
    size_t k = 0;
    for (size_t i = 0; online && member && i < m->n; i++)
        if (m->shards[i].state == HC_STATE_ONLINE) {
            online[k] =
                (struct hc_maglev_shard){m->shards[i].id, m->shards[i].id_len, m->shards[i].weight};
            member[k++] = (uint32_t)i;
        }
    int rc = online && member ? 0 : hc_err_set(err, -ENOMEM, "out of memory");
    if (rc == 0 && k > 0) {
        r->table = malloc((size_t)c->table * sizeof *r->table);
        rc = r->table
                 ? hc_maglev_table(online, k, c->table, hc_digest_ossl_name(c->hash), r->table, err)
                 : hc_err_set(err, -ENOMEM, "out of memory for a table of %u slots", c->table);
        for (uint32_t s = 0; rc == 0 && s < c->table; s++)
            r->table[s] = member[r->table[s]];
    }
    free(online);
    free(member);
    return rc;
}

int hc_ring_place_table(struct hc_ring *r, const void *key, size_t len, struct hc_hit *out)
{
    unsigned char d[HC_DIGEST_MAX];
    if (hc_digest_once(r->key_digest, key, len, d) != 0)
        return -EIO;
    uint64_t bits = (uint64_t)hc_le32(d) | (uint64_t)hc_le32(d + 4) << 32;
    uint32_t slot = r->kind == HC_RING_JUMP ? (uint32_t)hc_jump(bits, (int32_t)r->table_size)
                                            : (uint32_t)(bits % r->table_size);
    *out = (struct hc_hit){.point = slot, .shard = r->table[slot]};
    return 0;
}

/* The ketama points of the online shards, `vnodes` a unit of weight (docs/contract.md §3), in
 * ring order. r->key_digest must be open. Returns 0, -ENOMEM or -EIO with err filled. */
static int hc_points_build(unsigned vnodes, const struct hc_membership *m, struct hc_ring *r,
                           struct hc_err *err)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->shards[i].state == HC_STATE_ONLINE)
            r->vnodes_total += (uint64_t)vnodes * m->shards[i].weight;
    r->points = malloc((r->vnodes_total ? r->vnodes_total : 1) * sizeof *r->points);
    if (r->points == NULL)
        return hc_err_set(err, -ENOMEM, "out of memory for %llu ring points",
                          (unsigned long long)r->vnodes_total);
    size_t words = hc_digest_size(r->key_digest) / 4;
    for (size_t i = 0; i < m->n; i++) {
        const struct hc_shard *s = &m->shards[i];
        if (s->state != HC_STATE_ONLINE)
            continue;
        uint32_t want = vnodes * s->weight;
        char text[HC_SHARD_ID_MAX + 32];
        unsigned char d[HC_DIGEST_MAX];
        for (uint32_t g = 0, k = 0; k < want; g++) {
            int len = snprintf(text, sizeof text, "%s-%u", s->id, g);
            if (hc_digest_once(r->key_digest, text, (size_t)len, d) != 0)
                return hc_err_set(err, -EIO, "digest failed");
            for (size_t j = 0; j < words && k < want; j++, k++) {
                struct hc_point *p = &r->points[r->n++];
                p->value = hc_le32(d + 4 * j);
                p->shard = (uint32_t)i;
                p->vnode = k;
            }
        }
    }
    qsort(r->points, r->n, sizeof *r->points, hc_point_cmp);
    return 0;
}

/* The jump table (docs/contract.md §10): slot s belongs to the owner of hash value
 * floor(s * 2^32 / slots) on the ring of 160 points a unit of weight, looked up as ascending
 * hashes along those points; the points are dropped once the slots are drawn. */
static int hc_jump_table_build(const struct hc_contract *c, const struct hc_membership *m,
                               struct hc_ring *r, struct hc_err *err)
{
    r->table_size = c->table;
    int rc = hc_points_build(HC_JUMP_VNODES, m, r, err);
    if (rc != 0 || r->n == 0)
        return rc;
    uint32_t *starts = malloc((size_t)c->table * sizeof *starts);
    struct hc_hit *hits = malloc((size_t)c->table * sizeof *hits);
    r->table = malloc((size_t)c->table * sizeof *r->table);
    if (!starts || !hits || !r->table)
        rc = hc_err_set(err, -ENOMEM, "out of memory for a table of %u slots", c->table);
    for (uint64_t s = 0; rc == 0 && s < c->table; s++)
        starts[s] = (uint32_t)((s << 32) / c->table);
    if (rc == 0)
        hc_ring_place_sorted(r, starts, c->table, hits);
    for (uint32_t s = 0; rc == 0 && s < c->table; s++)
        r->table[s] = hits[s].shard;
    free(starts);
    free(hits);
    free(r->points);
    r->points = NULL;
    r->n = 0;
    r->vnodes_total = 0;
    return rc;
}

int hc_ring_build(const struct hc_contract *c, const struct hc_membership *m, struct hc_ring *r,
                  struct hc_err *err)
{
    memset(r, 0, sizeof *r);
    r->kind = c->ring;
    int rc = hc_ring_id(c, m, r->id, err);
    rc = rc ? rc : hc_digest_open(hc_digest_ossl_name(c->hash), &r->key_digest, err);
    if (rc == 0)
        rc = c->ring == HC_RING_MAGLEV ? hc_table_build(c, m, r, err)
             : c->ring == HC_RING_JUMP ? hc_jump_table_build(c, m, r, err)
                                       : hc_points_build(c->vnodes, m, r, err);
    if (rc != 0)
        hc_ring_free(r);
    return rc;
}

void hc_ring_free(struct hc_ring *r)
{
    free(r->points);
    free(r->table);
    hc_digest_close(r->key_digest);
    memset(r, 0, sizeof *r);
}

int hc_ring_key_hash(struct hc_ring *r, const void *key, size_t len, uint32_t *hash)
{
    unsigned char d[HC_DIGEST_MAX];
    if (hc_digest_once(r->key_digest, key, len, d) != 0)
        return -EIO;
    *hash = hc_le32(d);
    return 0;
}

void hc_ring_place_sorted(const struct hc_ring *r, const uint32_t *hashes, size_t k,
                          struct hc_hit *out)
{
    const struct hc_point *p = r->points;
    size_t n = r->n, at = 0;
    for (size_t i = 0; i < k; i++) {
        uint32_t h = hashes[i];
        /* Invariant: every point before `at` has value < h (hashes ascend). Gallop ahead to
         * bracket the first point with value >= h, then bisect inside the bracket. */
        if (at < n && p[at].value < h) {
            size_t lo = at, step = 1; /* p[lo].value < h */
            while (lo + step < n && p[lo + step].value < h) {
                lo += step;
                step *= 2;
            }
            size_t hi = lo + step < n ? lo + step : n; /* p[hi].value >= h, or hi == n */
            while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                if (p[mid].value < h)
                    lo = mid;
                else
                    hi = mid;
            }
            at = hi;
        }
        const struct hc_point *hit = at < n ? &p[at] : &p[0];
        out[i].point = hit->value;
        out[i].shard = hit->shard;
        out[i].vnode = hit->vnode;
        out[i].wrap = at >= n;
    }
}
