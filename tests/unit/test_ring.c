/* libring: the docs/contract.md §6 golden values, the docs/contract.md §3 order and wrap, weights,
 * and consistency. */
#include <errno.h>
#include <stdlib.h>

#include <openssl/evp.h>

#include "check.h"
#include "ring.h"

static struct ring *build(enum ring_digest d, uint32_t vnodes, const struct ring_shard *s, size_t n)
{
    struct ring *r;
    struct ring_error err;
    if (ring_build(&r, d, vnodes, s, n, &err) != 0) {
        fprintf(stderr, "ring_build: %s\n", err.msg);
        exit(2);
    }
    return r;
}

static void test_golden(void)
{
    /* Given out of id order on purpose: the ring orders shards itself. */
    const struct ring_shard s[] = {{"shard-c", 7, 1}, {"shard-a", 7, 1}, {"shard-b", 7, 1}};
    struct ring *r = build(RING_SHA1, 160, s, 3);
    static const struct {
        const char *key;
        uint32_t hash, point, vnode;
        const char *shard;
        int wrapped;
    } rows[] = {
        {"order:1001", 3001802920u, 3046879832u, 15, "shard-b", 0},
        {"user:42", 592310701u, 593769253u, 2, "shard-c", 0},
        {"cart:9", 2934343843u, 2942651850u, 150, "shard-a", 0},
        {"sku:55", 1904427621u, 1911314043u, 151, "shard-a", 0},
        {"user:842", 4294347913u, 3038923u, 87, "shard-c", 1},
        {"order:1002", 1627255193u, 1632378279u, 119, "shard-b", 0},
        {"invoice:8", 340884089u, 342641705u, 159, "shard-c", 0},
        {"user:7", 27024618u, 30688554u, 141, "shard-c", 0},
    };
    CHECK_EQ_STR(ring_id(r), "ce0ad72e7a89a4843f1199a33e0c83fcba059cfc");
    CHECK_EQ_U64(ring_points_total(r), 480);
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct ring_placement p;
        CHECK_EQ_U64(ring_lookup(r, rows[i].key, strlen(rows[i].key), &p), 0);
        CHECK_EQ_U64(p.hash, rows[i].hash);
        CHECK_EQ_U64(p.point, rows[i].point);
        CHECK_EQ_U64(p.vnode, rows[i].vnode);
        CHECK_EQ_STR(ring_shard_id(r, p.shard), rows[i].shard);
        CHECK_EQ_U64(p.wrapped, rows[i].wrapped);
    }
    ring_free(r);
}

/* Every shard gets exactly vnodes * weight points, whatever the other shards are. */
static void test_points_per_shard(void)
{
    const struct ring_shard s[] = {{"a", 1, 1}, {"b", 1, 3}, {"c", 1, 1}, {"d", 1, 2}, {"e", 1, 1}};
    for (int d = 0; d < 2; d++) {
        struct ring *r = build(d ? RING_MD5 : RING_SHA1, 40, s, 5);
        size_t count[5] = {0};
        for (size_t i = 0; i < ring_points_total(r); i++)
            count[ring_point_at(r, i).shard]++;
        CHECK_EQ_U64(ring_points_total(r), 40 * 8);
        CHECK_EQ_U64(count[0], 40);
        CHECK_EQ_U64(count[1], 120);
        CHECK_EQ_U64(count[3], 80);
        ring_free(r);
    }
}

static int point_less(struct ring_point a, struct ring_point b)
{
    if (a.value != b.value)
        return a.value < b.value;
    if (a.shard != b.shard)
        return a.shard < b.shard; /* shard indexes follow id order */
    return a.vnode < b.vnode;
}

/* A big ring has equal point values; they are kept, in (shard id, vnode) order, and a hash
 * equal to a tied value lands on the first of them. */
static void test_order_and_ties(void)
{
    size_t n = 2000;
    struct ring_shard *s = calloc(n, sizeof(*s));
    char(*ids)[16] = calloc(n, 16);
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i], 16, "node-%u", (unsigned)i);
        s[i] = (struct ring_shard){ids[i], strlen(ids[i]), 1};
    }
    struct ring *r = build(RING_SHA1, 160, s, n);
    size_t ties = 0, misordered = 0;
    for (size_t i = 1; i < ring_points_total(r); i++) {
        struct ring_point a = ring_point_at(r, i - 1), b = ring_point_at(r, i);
        misordered += !point_less(a, b);
        if (a.value == b.value && (i < 2 || ring_point_at(r, i - 2).value != a.value)) {
            ties++;
            struct ring_placement p;
            ring_lookup_hash(r, a.value, &p);
            CHECK_EQ_U64(p.shard, a.shard);
            CHECK_EQ_U64(p.vnode, a.vnode);
        }
    }
    CHECK_EQ_U64(ring_points_total(r), 320000);
    CHECK_EQ_U64(misordered, 0);
    CHECK_TRUE(ties > 0); /* about 12 expected at 320,000 points */
    ring_free(r);
    free(s);
    free(ids);
}

/* The bucketed search answers exactly what a linear scan for the first point >= hash does. */
static void test_lookup_matches_scan(void)
{
    const struct ring_shard s[] = {{"x", 1, 1}, {"y", 1, 2}, {"z", 1, 1}};
    uint32_t vnodes[] = {1, 3, 160, 1000};
    for (size_t v = 0; v < 4; v++) {
        struct ring *r = build(RING_MD5, vnodes[v], s, 3);
        size_t n = ring_points_total(r), wrong = 0;
        uint32_t h = 12345;
        for (int k = 0; k < 20000; k++) {
            h = h * 1664525u + 1013904223u;
            uint32_t hash = k == 0 ? 0 : k == 1 ? UINT32_MAX : h;
            size_t i = 0;
            while (i < n && ring_point_at(r, i).value < hash)
                i++;
            struct ring_placement p;
            ring_lookup_hash(r, hash, &p);
            struct ring_point want = ring_point_at(r, i == n ? 0 : i);
            wrong += p.point != want.value || p.vnode != want.vnode || p.shard != want.shard ||
                     p.wrapped != (i == n);
        }
        CHECK_EQ_U64(wrong, 0);
        ring_free(r);
    }
}

/* How many of the hashes v - 1, v and v + 1 of every point value v ring_lookup_hashes (the
 * batched path: buckets, binary search, prefetch) places differently from ring_lookup_hash
 * (the single-key path: coarse buckets, interpolated windows). */
static size_t batched_differences(const struct ring *r)
{
    enum { CHUNK = 256 };
    uint32_t hashes[CHUNK];
    struct ring_placement batched[CHUNK];
    size_t total = ring_points_total(r), differ = 0, m = 0;
    for (size_t i = 0; i < total; i++) {
        for (uint32_t d = 0; d < 3; d++)
            hashes[m++] = ring_point_at(r, i).value + d - 1; /* wraps at 0 and UINT32_MAX */
        if (m + 3 > CHUNK || i + 1 == total) {
            ring_lookup_hashes(r, hashes, m, batched);
            for (size_t j = 0; j < m; j++) {
                struct ring_placement p;
                ring_lookup_hash(r, hashes[j], &p);
                const struct ring_placement *b = &batched[j];
                differ += p.hash != b->hash || p.point != b->point || p.shard != b->shard ||
                          p.vnode != b->vnode || p.wrapped != b->wrapped;
            }
            m = 0;
        }
    }
    return differ;
}

/* On a ring big enough for the per-group bucket fill (320,000 points), a hash equal to any
 * point's value, one below it and one above it lands where a walk along the sorted points
 * says: every bucket edge and every prefetched range is crossed, and the single-key path's
 * windows land before, on and after their answers (the restart from the bucket's start and
 * the walk on to the next window both happen). The batched path places them all the same. */
static void test_big_ring_every_point(void)
{
    size_t n = 2000;
    struct ring_shard *s = calloc(n, sizeof(*s));
    char(*ids)[16] = calloc(n, 16);
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i], 16, "edge-%u", (unsigned)i);
        s[i] = (struct ring_shard){ids[i], strlen(ids[i]), 1};
    }
    struct ring *r = build(RING_SHA1, 160, s, n);
    size_t total = ring_points_total(r), wrong = 0;
    for (size_t i = 0; i < total; i++) {
        uint32_t v = ring_point_at(r, i).value;
        uint32_t probe[3] = {v - 1, v, v + 1};
        for (int k = 0; k < 3; k++) {
            if ((k == 0 && v == 0) || (k == 2 && v == UINT32_MAX))
                continue;
            size_t j = k < 2 ? i : i + 1; /* the first point >= probe */
            while (j > 0 && ring_point_at(r, j - 1).value >= probe[k])
                j--;
            while (j < total && ring_point_at(r, j).value < probe[k])
                j++;
            struct ring_point want = ring_point_at(r, j == total ? 0 : j);
            struct ring_placement p;
            ring_lookup_hash(r, probe[k], &p);
            wrong += p.point != want.value || p.shard != want.shard || p.vnode != want.vnode ||
                     p.wrapped != (j == total);
        }
    }
    CHECK_EQ_U64(total, 320000);
    CHECK_EQ_U64(wrong, 0);
    CHECK_EQ_U64(batched_differences(r), 0);
    ring_free(r);
    free(s);
    free(ids);
}

static void test_wrap_and_exact(void)
{
    const struct ring_shard s[] = {{"shard-a", 7, 1}, {"shard-b", 7, 1}, {"shard-c", 7, 1}};
    struct ring *r = build(RING_SHA1, 160, s, 3);
    struct ring_point first = ring_point_at(r, 0), last = ring_point_at(r, 479);
    struct ring_placement p;
    ring_lookup_hash(r, last.value + 1, &p);
    CHECK_EQ_U64(p.wrapped, 1);
    CHECK_EQ_U64(p.point, first.value);
    ring_lookup_hash(r, last.value, &p); /* >=, not > */
    CHECK_EQ_U64(p.wrapped, 0);
    CHECK_EQ_U64(p.point, last.value);
    ring_lookup_hash(r, 0, &p);
    CHECK_EQ_U64(p.point, first.value);
    CHECK_EQ_U64(p.wrapped, 0);
    ring_free(r);
}

static void test_empty_and_invalid(void)
{
    struct ring *r = build(RING_SHA1, 160, NULL, 0);
    struct ring_placement p;
    CHECK_EQ_U64(ring_points_total(r), 0);
    CHECK_EQ_U64(ring_lookup(r, "k", 1, &p), (uint64_t)-ENOENT);
    ring_free(r);
    struct ring_error err;
    const struct ring_shard dup[] = {{"a", 1, 1}, {"a", 1, 1}};
    CHECK_EQ_U64(ring_build(&r, RING_SHA1, 160, dup, 2, &err), (uint64_t)-EINVAL);
    CHECK_EQ_STR(err.msg, "duplicate shard id \"a\"");
    CHECK_EQ_U64(ring_build(&r, RING_SHA1, 0, dup, 1, &err), (uint64_t)-EINVAL);
    CHECK_EQ_STR(err.msg, "vnodes 0 is not 1..4096");
    const struct ring_shard heavy[] = {{"a", 1, 1001}};
    CHECK_EQ_U64(ring_build(&r, RING_SHA1, 1, heavy, 1, &err), (uint64_t)-EINVAL);
}

static void names(char (*ids)[16], struct ring_shard *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i], 16, "s%02u", (unsigned)i);
        s[i] = (struct ring_shard){ids[i], strlen(ids[i]), 1};
    }
}

/* Removing one of N shards moves only its keys; adding one moves keys only onto it. */
static void test_consistency(void)
{
    char ids[11][16];
    struct ring_shard s[11];
    names(ids, s, 11);
    struct ring *ten = build(RING_SHA1, 160, s, 10);
    struct ring *nine = build(RING_SHA1, 160, s + 1, 9); /* s00 gone */
    struct ring *eleven = build(RING_SHA1, 160, s, 11);  /* s10 added */
    size_t keys = 100000, moved_wrongly = 0, gained = 0, moved_add = 0;
    for (size_t k = 0; k < keys; k++) {
        char key[24];
        int len = snprintf(key, sizeof(key), "key:%zu", k);
        struct ring_placement a, b, c;
        ring_lookup(ten, key, (size_t)len, &a);
        ring_lookup(nine, key, (size_t)len, &b);
        ring_lookup(eleven, key, (size_t)len, &c);
        const char *before = ring_shard_id(ten, a.shard);
        if (strcmp(before, "s00") != 0 && strcmp(before, ring_shard_id(nine, b.shard)) != 0)
            moved_wrongly++;
        if (strcmp(before, ring_shard_id(eleven, c.shard)) != 0) {
            moved_add++;
            gained += strcmp(ring_shard_id(eleven, c.shard), "s10") == 0;
        }
    }
    CHECK_EQ_U64(moved_wrongly, 0);
    CHECK_EQ_U64(gained, moved_add);
    /* About 1/11 of the keys move to the new shard; allow for the spread of 160 vnodes. */
    CHECK_TRUE(moved_add > keys / 11 / 2 && moved_add < keys / 11 * 2);
    ring_free(ten);
    ring_free(nine);
    ring_free(eleven);
}

/* Every hashing path (one-block transform, Update/Final, four interleaved MD5 lanes) gives
 * LE32 of the first four bytes of the digest OpenSSL's EVP computes, at every key length
 * around the one-block limit. */
static void test_key_hash_paths(void)
{
    const struct ring_shard s[] = {{"a", 1, 1}};
    char buf[100][100];
    const char *keys[100];
    size_t lens[100];
    for (size_t i = 0; i < 100; i++) {
        for (size_t j = 0; j < i; j++)
            buf[i][j] = (char)(0x20 + (i * 7 + j * 13) % 200);
        keys[i] = buf[i];
        lens[i] = i;
    }
    for (int d = 0; d < 2; d++) {
        struct ring *r = build(d ? RING_MD5 : RING_SHA1, 1, s, 1);
        uint32_t batch[100];
        ring_hash_keys(r, keys, lens, 100, batch);
        size_t wrong_single = 0, wrong_batch = 0;
        for (size_t i = 0; i < 100; i++) {
            unsigned char md[EVP_MAX_MD_SIZE];
            EVP_Digest(keys[i], lens[i], md, NULL, d ? EVP_md5() : EVP_sha1(), NULL);
            uint32_t want = (uint32_t)md[0] | (uint32_t)md[1] << 8 | (uint32_t)md[2] << 16 |
                            (uint32_t)md[3] << 24;
            wrong_single += ring_hash_key(r, keys[i], lens[i]) != want;
            wrong_batch += batch[i] != want;
        }
        CHECK_EQ_U64(wrong_single, 0);
        CHECK_EQ_U64(wrong_batch, 0);
        ring_free(r);
    }
}

int main(void)
{
    test_golden();
    test_points_per_shard();
    test_order_and_ties();
    test_lookup_matches_scan();
    test_big_ring_every_point();
    test_wrap_and_exact();
    test_empty_and_invalid();
    test_consistency();
    test_key_hash_paths();
    return CHECK_DONE();
}
