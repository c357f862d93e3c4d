/* Jump consistent hash (docs/contract.md §10), the gateway's ring_jump and health's hc_jump:
 * the published values and tests/golden/jump.txt (the probe's, checked by it too), edge counts,
 * the two against each other on a million keys, and the movement when a bucket is added. Then
 * the jump ring: the worked example's table, ring id and keys, the gateway's and health's tables
 * slot by slot on random memberships, and what a change moves. Runs as `test_jump SOURCE_DIR`. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../health/jump.h"
#include "../../health/ring.h"
#include "check.h"
#include "ring.h"

/* Lamping and Veach's values: keys 0..19 among 100 buckets, and key 2 among 100,001. */
static void test_published(void)
{
    static const int32_t want[20] = {0,  55, 62, 8,  45, 59, 86, 97, 82, 59,
                                     73, 37, 17, 56, 86, 21, 90, 37, 38, 83};
    for (uint64_t k = 0; k < 20; k++) {
        CHECK_EQ_U64(ring_jump(k, 100), want[k]);
        CHECK_EQ_U64(hc_jump(k, 100), want[k]);
    }
    CHECK_EQ_U64(ring_jump(2, 100001), 80343);
    CHECK_EQ_U64(hc_jump(2, 100001), 80343);
}

/* Every line of tests/golden/jump.txt: key, buckets, the probe's bucket. */
static void test_golden_file(const char *source)
{
    char path[4096], line[256];
    snprintf(path, sizeof(path), "%s/tests/golden/jump.txt", source);
    FILE *f = fopen(path, "r");
    CHECK_REPORT(f != NULL, "cannot open %s", path);
    if (!f)
        return;
    int rows = 0;
    while (fgets(line, sizeof(line), f)) {
        uint64_t key;
        int32_t buckets, bucket;
        if (line[0] == '#')
            continue;
        CHECK_REPORT(sscanf(line, "%" SCNu64 " %" SCNd32 " %" SCNd32, &key, &buckets, &bucket) == 3,
                     "%s: not a row: %s", path, line);
        CHECK_EQ_U64(ring_jump(key, buckets), bucket);
        CHECK_EQ_U64(hc_jump(key, buckets), bucket);
        rows++;
    }
    fclose(f);
    CHECK_EQ_U64(rows, 261);
}

static void test_edges(void)
{
    CHECK_EQ_U64(ring_jump(12345, 0), (uint64_t)-1);
    CHECK_EQ_U64(hc_jump(12345, 0), (uint64_t)-1);
    CHECK_EQ_U64(ring_jump(UINT64_MAX, 1), 0);
    CHECK_EQ_U64(hc_jump(UINT64_MAX, 1), 0);
    int32_t most = ring_jump(UINT64_MAX, INT32_MAX);
    CHECK_TRUE(most >= 0 && most < INT32_MAX);
    CHECK_EQ_U64(hc_jump(UINT64_MAX, INT32_MAX), most);
}

/* A bucket added at the end: a key stays where it was or moves to the new bucket, never
 * elsewhere; and the two implementations agree on every key. */
static void test_agree_and_move(void)
{
    uint64_t x = 0x2545F4914F6CDD1DULL;
    int disagree = 0, strays = 0;
    long moved = 0;
    for (int i = 0; i < 1000000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int32_t n = 1 + (int32_t)(x % 1000);
        int32_t before = ring_jump(x, n), after = ring_jump(x, n + 1);
        disagree += hc_jump(x, n) != before;
        strays += after != before && after != n;
        moved += after == n;
    }
    CHECK_EQ_U64(disagree, 0);
    CHECK_EQ_U64(strays, 0);
    /* about 1/(n+1) of the keys move, n uniform in 1..1000: some 7,000 of a million */
    CHECK_REPORT(moved > 3000 && moved < 15000, "moved %ld of 1000000", moved);
}

/* docs/contract.md §10's worked example: s0, s1, s2 of weight 1 over 13 slots (SHA-1). */
static void test_jump_ring_example(void)
{
    struct ring_shard s[3] = {{"s2", 2, 1}, {"s0", 2, 1}, {"s1", 2, 1}};
    struct ring_error err;
    struct ring *r;
    CHECK_EQ_U64(ring_build_jump(&r, RING_SHA1, 13, s, 3, &err), 0);
    CHECK_EQ_U64(ring_algorithm_of(r), RING_JUMP);
    CHECK_EQ_U64(ring_table_size(r), 13);
    CHECK_EQ_U64(ring_points_total(r), 0);
    CHECK_EQ_STR(ring_id(r), "3372cede41e717b33f44256369ccd6c9ade0254c");
    char got[14];
    for (int i = 0; i < 13; i++)
        got[i] = ring_shard_id(r, ring_table(r)[i])[1];
    got[13] = '\0';
    CHECK_EQ_STR(got, "1110011012220");
    static const char *const keys[] = {"a", "b", "c", "order:1001", ""};
    static const uint32_t slots[] = {3, 10, 2};
    size_t lens[5];
    struct ring_placement many[5];
    for (size_t k = 0; k < 5; k++) {
        struct ring_placement p;
        lens[k] = strlen(keys[k]);
        CHECK_EQ_U64(ring_lookup(r, keys[k], lens[k], &p), 0);
        uint64_t bits = ring_digest_u64(RING_SHA1, keys[k], lens[k]);
        CHECK_EQ_U64(p.point, (uint64_t)ring_jump(bits, 13));
        CHECK_EQ_U64(p.hash, (uint32_t)bits);
        CHECK_EQ_U64(p.shard, ring_table(r)[p.point]);
        if (k < 3)
            CHECK_EQ_U64(p.point, slots[k]);
    }
    CHECK_EQ_U64(ring_lookup_keys(r, keys, lens, 5, many), 0);
    for (size_t k = 0; k < 5; k++) {
        struct ring_placement one;
        ring_lookup(r, keys[k], lens[k], &one);
        CHECK_EQ_U64(memcmp(&one, &many[k], sizeof(one)), 0);
    }
    ring_free(r);
    CHECK_EQ_U64(ring_build_jump(&r, RING_SHA1, 0, s, 3, &err), (uint64_t)-EINVAL);
    CHECK_EQ_U64(ring_build_jump(&r, RING_SHA1, RING_JUMP_SLOTS_MAX + 1, s, 3, &err),
                 (uint64_t)-EINVAL);
    CHECK_EQ_U64(ring_build_jump(&r, RING_MD5, 1, s, 0, &err), 0);
    struct ring_placement p;
    CHECK_EQ_U64(ring_lookup(r, "a", 1, &p), (uint64_t)-ENOENT);
    ring_free(r);
}

/* Health's table of the same shards (all online), from its own parser and ring. */
static uint32_t *health_table(const struct ring_shard *s, size_t n, uint32_t slots, int md5,
                              struct hc_membership *m)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, json_pack("{s:s%, s:s, s:i, s:i}", "id", s[i].id, s[i].id_len,
                                             "state", "online", "capacity", 1, "weight",
                                             (int)s[i].weight));
    struct hc_contract c = {
        .ring = HC_RING_JUMP, .hash = md5 ? HC_HASH_MD5 : HC_HASH_SHA1, .table = slots};
    struct hc_err err;
    struct hc_ring hr;
    CHECK_EQ_U64(hc_membership_from_json(arr, "shards", &c, m, &err), 0);
    CHECK_EQ_U64(hc_ring_build(&c, m, &hr, &err), 0);
    json_decref(arr);
    uint32_t *t = hr.table;
    hr.table = NULL;
    hc_ring_free(&hr);
    return t;
}

/* 200 random memberships (1 to 40 shards, weights 1 to 5, ids with common prefixes, 1 to 5,000
 * slots): the gateway's and health's tables name the same shard in every slot; adding a shard
 * moves slots only to it, and taking the first away moves only its own slots; each ring built
 * from the one before (a reload) is the ring built from scratch. */
static void test_jump_ring_random(void)
{
    uint64_t x = 0x2545F4914F6CDD1DULL;
    char ids[41][8];
    for (int round = 0; round < 200; round++) {
        size_t n = 1 + (x >> 40) % 40;
        uint32_t slots = 1 + (uint32_t)((x >> 20) % 5000);
        int md5 = round % 3 == 0;
        struct ring_shard s[41];
        for (size_t i = 0; i <= n; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            int len = snprintf(ids[i], sizeof(ids[i]), "%c%zu", "ab"[x >> 63], i);
            s[i] = (struct ring_shard){ids[i], (size_t)len, 1 + (uint32_t)((x >> 33) % 5)};
        }
        struct ring *a, *b, *c;
        struct ring_error err;
        enum ring_digest d = md5 ? RING_MD5 : RING_SHA1;
        CHECK_EQ_U64(ring_build_jump(&a, d, slots, s, n, &err), 0);
        CHECK_EQ_U64(ring_build_jump(&b, d, slots, s, n + 1, &err), 0);     /* s[n] added */
        CHECK_EQ_U64(ring_build_jump(&c, d, slots, s + 1, n - 1, &err), 0); /* s[0] gone */
        struct ring *b2, *c2; /* the same rings built from a's, as a reload builds them */
        CHECK_EQ_U64(ring_build_jump_from(&b2, a, d, slots, s, n + 1, &err), 0);
        CHECK_EQ_U64(ring_build_jump_from(&c2, b2, d, slots, s + 1, n - 1, &err), 0);
        CHECK_EQ_STR(ring_id(b2), ring_id(b));
        CHECK_EQ_U64(memcmp(ring_table(b2), ring_table(b), slots * sizeof(uint32_t)), 0);
        if (n > 1)
            CHECK_EQ_U64(memcmp(ring_table(c2), ring_table(c), slots * sizeof(uint32_t)), 0);
        ring_free(b2);
        ring_free(c2);
        struct hc_membership m;
        uint32_t *theirs = health_table(s, n, slots, md5, &m);
        const uint32_t *ta = ring_table(a), *tb = ring_table(b), *tc = ring_table(c);
        for (uint32_t k = 0; k < slots; k++) {
            const char *mine = ring_shard_id(a, ta[k]);
            CHECK_EQ_STR(mine, m.shards[theirs[k]].id);
            if (strcmp(ring_shard_id(b, tb[k]), mine) != 0)
                CHECK_EQ_STR(ring_shard_id(b, tb[k]), ids[n]);
            if (n > 1 && strcmp(ring_shard_id(c, tc[k]), mine) != 0)
                CHECK_EQ_STR(mine, ids[0]);
        }
        free(theirs);
        hc_membership_free(&m);
        ring_free(a);
        ring_free(b);
        ring_free(c);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_jump SOURCE_DIR\n");
        return 2;
    }
    test_published();
    test_golden_file(argv[1]);
    test_edges();
    test_agree_and_move();
    test_jump_ring_example();
    test_jump_ring_random();
    return CHECK_DONE();
}
