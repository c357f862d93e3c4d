/* The Maglev table (docs/contract.md §11), the gateway's ring_maglev_table and health's
 * hc_maglev_table: the worked example's table slot by slot, every row of
 * tests/golden/maglev.txt (the probe's figures, which it checks too) in the order listed and
 * reversed, refused inputs, and the keys' 64 bits. Runs as `test_maglev SOURCE_DIR`. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "../../health/maglev.h"
#include "check.h"
#include "ring.h"

#define MAX_SHARDS 1000

/* One row of the golden file: its shards as listed, the slots each owns, the table's digest. */
struct row {
    char hash[8];
    uint32_t size;
    size_t n;
    struct ring_shard shards[MAX_SHARDS];
    uint32_t want_slots[MAX_SHARDS];
    char want_sha1[41];
};

/* The SHA-1 of the owners' ids, each followed by "\n", slot 0 first. */
static void table_sha1(const struct ring_shard *s, const uint32_t *table, uint32_t size,
                       char hex[41])
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned char d[20];
    EVP_DigestInit_ex(c, EVP_sha1(), NULL);
    for (uint32_t i = 0; i < size; i++) {
        EVP_DigestUpdate(c, s[table[i]].id, s[table[i]].id_len);
        EVP_DigestUpdate(c, "\n", 1);
    }
    EVP_DigestFinal_ex(c, d, NULL);
    EVP_MD_CTX_free(c);
    for (int i = 0; i < 20; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

/* Both implementations build the row's table; the slots each owns and the digest must match. */
static void check_row(const struct row *r, const char *what)
{
    enum ring_digest digest;
    CHECK_EQ_U64(ring_digest_parse(r->hash, &digest), 0);
    uint32_t *mine = malloc(r->size * sizeof(*mine)), *theirs = malloc(r->size * sizeof(*theirs));
    struct hc_maglev_shard hs[MAX_SHARDS];
    for (size_t i = 0; i < r->n; i++)
        hs[i] = (struct hc_maglev_shard){r->shards[i].id, r->shards[i].id_len, r->shards[i].weight};
    struct hc_err err;
    CHECK_EQ_U64(ring_maglev_table(r->shards, r->n, r->size, digest, mine), 0);
    CHECK_EQ_U64(
        hc_maglev_table(hs, r->n, r->size, digest == RING_MD5 ? "MD5" : "SHA1", theirs, &err), 0);
    uint32_t slots[MAX_SHARDS] = {0};
    for (uint32_t s = 0; s < r->size; s++)
        slots[mine[s]]++;
    for (size_t i = 0; i < r->n; i++)
        CHECK_REPORT(slots[i] == r->want_slots[i], "%s %s %u: shard %s owns %u slots, want %u",
                     what, r->hash, r->size, r->shards[i].id, slots[i], r->want_slots[i]);
    char hex[41];
    table_sha1(r->shards, mine, r->size, hex);
    CHECK_REPORT(strcmp(hex, r->want_sha1) == 0, "%s %s %u: table %s, want %s", what, r->hash,
                 r->size, hex, r->want_sha1);
    table_sha1(r->shards, theirs, r->size, hex);
    CHECK_REPORT(strcmp(hex, r->want_sha1) == 0, "%s %s %u: health's table %s, want %s", what,
                 r->hash, r->size, hex, r->want_sha1);
    free(mine);
    free(theirs);
}

/* "id:w,id:w,..." into r->shards (ids point into `list`, which is cut), "n,n,..." into slots. */
static int parse_row(char *line, struct row *r)
{
    char *shards = NULL, *slots = NULL;
    char *hash = strtok(line, " "), *size = strtok(NULL, " ");
    shards = strtok(NULL, " ");
    slots = strtok(NULL, " ");
    char *sha = strtok(NULL, " \n");
    if (!hash || !size || !shards || !slots || !sha || strlen(hash) >= sizeof(r->hash) ||
        strlen(sha) != 40)
        return -1;
    strcpy(r->hash, hash);
    strcpy(r->want_sha1, sha);
    r->size = (uint32_t)strtoul(size, NULL, 10);
    r->n = 0;
    for (char *save = NULL, *t = strtok_r(shards, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(t, ':');
        if (!colon || r->n == MAX_SHARDS)
            return -1;
        *colon = '\0';
        r->shards[r->n++] = (struct ring_shard){t, strlen(t), (uint32_t)atoi(colon + 1)};
    }
    size_t k = 0;
    for (char *save = NULL, *t = strtok_r(slots, ",", &save); t && k < r->n;
         t = strtok_r(NULL, ",", &save))
        r->want_slots[k++] = (uint32_t)strtoul(t, NULL, 10);
    return k == r->n ? 0 : -1;
}

/* The same shards listed the other way round own the same slots. */
static void reverse(struct row *r)
{
    for (size_t i = 0, j = r->n - 1; i < j; i++, j--) {
        struct ring_shard s = r->shards[i];
        uint32_t w = r->want_slots[i];
        r->shards[i] = r->shards[j];
        r->want_slots[i] = r->want_slots[j];
        r->shards[j] = s;
        r->want_slots[j] = w;
    }
}

/* key HASH HEX-OR-DASH VALUE: the key's 64 bits. */
static void check_key(char *line)
{
    char hash[8], hex[64];
    uint64_t want;
    CHECK_REPORT(sscanf(line, "key %7s %63s %" SCNu64, hash, hex, &want) == 3, "not a key row: %s",
                 line);
    enum ring_digest digest;
    CHECK_EQ_U64(ring_digest_parse(hash, &digest), 0);
    unsigned char key[32];
    size_t len = 0;
    for (const char *p = hex; strcmp(hex, "-") != 0 && p[0] && p[1] && len < sizeof(key); p += 2)
        key[len++] = (unsigned char)strtoul((char[]){p[0], p[1], 0}, NULL, 16);
    CHECK_EQ_U64(ring_digest_u64(digest, key, len), want);
    if (len < 4)
        return;
    struct ring *one;
    struct ring_shard spec = {"x", 1, 1};
    CHECK_EQ_U64(ring_build(&one, digest, 1, &spec, 1, NULL), 0);
    CHECK_EQ_U64(ring_hash_key(one, key, len), (uint32_t)want); /* the low half: ketama's hash */
    ring_free(one);
}

static void test_golden_file(const char *source)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/tests/golden/maglev.txt", source);
    FILE *f = fopen(path, "r");
    CHECK_REPORT(f != NULL, "cannot open %s", path);
    if (!f)
        return;
    static struct row r;
    char *line = NULL;
    size_t cap = 0;
    int tables = 0, keys = 0;
    while (getline(&line, &cap, f) > 0) {
        if (line[0] == '#')
            continue;
        if (strncmp(line, "key ", 4) == 0) {
            check_key(line);
            keys++;
            continue;
        }
        CHECK_REPORT(parse_row(line, &r) == 0, "%s: not a row", path);
        check_row(&r, "as listed");
        reverse(&r);
        check_row(&r, "reversed");
        tables++;
    }
    free(line);
    fclose(f);
    CHECK_EQ_U64(tables, 12);
    CHECK_EQ_U64(keys, 8);
}

/* docs/contract.md §11's worked example, slot by slot. */
static void test_worked_example(void)
{
    static const char want[] = "2001210220110"; /* s2 s0 s0 s1 ... */
    struct ring_shard s[3] = {{"s2", 2, 1}, {"s0", 2, 1}, {"s1", 2, 1}};
    uint32_t table[13];
    CHECK_EQ_U64(ring_maglev_table(s, 3, 13, RING_SHA1, table), 0);
    char got[14];
    for (int i = 0; i < 13; i++)
        got[i] = s[table[i]].id[1];
    got[13] = '\0';
    CHECK_EQ_STR(got, want);
}

/* The worked example as a ring: its table in id order, keys placed at LE64(SHA-1) mod 13 ("a"
 * at slot 8 of s2), its ring id, a table too small for its shards refused, an empty ring. */
static void test_ring_of_table(void)
{
    struct ring_shard s[3] = {{"s2", 2, 1}, {"s0", 2, 1}, {"s1", 2, 1}};
    struct ring_error err;
    struct ring *r;
    CHECK_EQ_U64(ring_build_maglev(&r, RING_SHA1, 13, s, 3, &err), 0);
    CHECK_EQ_U64(ring_algorithm_of(r), RING_MAGLEV);
    CHECK_EQ_U64(ring_table_size(r), 13);
    CHECK_EQ_U64(ring_points_total(r), 0);
    CHECK_EQ_STR(ring_id(r), "30b8f347663f99556f30720d106687db7ec16b50");
    char got[14];
    for (int i = 0; i < 13; i++)
        got[i] = ring_shard_id(r, ring_table(r)[i])[1];
    got[13] = '\0';
    CHECK_EQ_STR(got, "2001210220110");
    static const char *const keys[] = {"a", "b", "c", "order:1001", ""};
    static const uint32_t slots[] = {8, 5, 3};
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        struct ring_placement p;
        size_t len = strlen(keys[k]);
        CHECK_EQ_U64(ring_lookup(r, keys[k], len, &p), 0);
        uint64_t bits = ring_digest_u64(RING_SHA1, keys[k], len);
        CHECK_EQ_U64(p.point, bits % 13);
        CHECK_EQ_U64(p.hash, (uint32_t)bits);
        CHECK_EQ_U64(p.shard, ring_table(r)[p.point]);
        CHECK_EQ_U64(p.vnode + (uint64_t)p.wrapped, 0);
        if (k < 3)
            CHECK_EQ_U64(p.point, slots[k]);
    }
    size_t lens[5];
    struct ring_placement many[5];
    for (size_t k = 0; k < 5; k++)
        lens[k] = strlen(keys[k]);
    CHECK_EQ_U64(ring_lookup_keys(r, keys, lens, 5, many), 0); /* the batched path, the same */
    for (size_t k = 0; k < 5; k++) {
        struct ring_placement one;
        ring_lookup(r, keys[k], lens[k], &one);
        CHECK_EQ_U64(memcmp(&one, &many[k], sizeof(one)), 0);
    }
    ring_free(r);
    CHECK_EQ_U64(ring_build_maglev(&r, RING_SHA1, 2, s, 3, &err), (uint64_t)-EINVAL);
    CHECK_EQ_U64(ring_build_maglev(&r, RING_SHA1, 15, s, 3, &err), (uint64_t)-EINVAL);
    CHECK_EQ_U64(ring_build_maglev(&r, RING_SHA1, RING_MAGLEV_TABLE_MAX + 2, s, 1, &err),
                 (uint64_t)-EINVAL);
    CHECK_EQ_U64(ring_build_maglev(&r, RING_MD5, 3, s, 0, &err), 0);
    struct ring_placement p;
    CHECK_EQ_U64(ring_lookup(r, "a", 1, &p), (uint64_t)-ENOENT);
    ring_free(r);
}

/* 300 random memberships (1 to 60 shards, weights 1 to 9, ids of 1 to 12 bytes from a small
 * alphabet so that prefixes occur, a prime size from 2 to about 20,000, SHA-1 or MD5): the
 * gateway's table and health's agree slot by slot, and every shard owns about its share. */
static void test_random_agree(void)
{
    static const uint32_t primes[] = {2, 3, 5, 7, 13, 101, 251, 1009, 4099, 10007, 20011};
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    char ids[60][16];
    struct ring_shard s[60];
    struct hc_maglev_shard h[60];
    static uint32_t mine[20011], theirs[20011];
    int disagree = 0, unfair = 0;
    for (int round = 0; round < 300; round++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t n = 1 + x % 60, k = 0;
        uint32_t m = primes[(x >> 8) % (sizeof(primes) / sizeof(primes[0]))];
        enum ring_digest digest = (x >> 20) & 1 ? RING_MD5 : RING_SHA1;
        while (k < n) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t len = 1 + x % 12;
            for (size_t c = 0; c < len; c++)
                ids[k][c] = "ab-1"[(x >> (8 + 2 * c)) & 3];
            ids[k][len] = '\0';
            int twice = 0;
            for (size_t j = 0; j < k; j++)
                twice |= strcmp(ids[j], ids[k]) == 0;
            if (twice)
                continue;
            uint32_t w = 1 + (uint32_t)((x >> 40) % 9);
            s[k] = (struct ring_shard){ids[k], len, w};
            h[k] = (struct hc_maglev_shard){ids[k], len, w};
            k++;
        }
        struct hc_err err;
        CHECK_EQ_U64(ring_maglev_table(s, n, m, digest, mine), 0);
        CHECK_EQ_U64(hc_maglev_table(h, n, m, digest == RING_MD5 ? "MD5" : "SHA1", theirs, &err),
                     0);
        disagree += memcmp(mine, theirs, m * sizeof(*mine)) != 0;
        uint64_t total = 0, owned[60] = {0};
        for (size_t i = 0; i < n; i++)
            total += s[i].weight;
        for (uint32_t i = 0; i < m; i++)
            owned[mine[i]]++;
        for (size_t i = 0; m >= 100 * n && i < n; i++) { /* 100 slots a shard or more: its share */
            double want = (double)m * s[i].weight / (double)total;
            unfair += owned[i] + 1 < want * 0.9 || owned[i] > want * 1.1 + 1;
        }
    }
    CHECK_EQ_U64(disagree, 0);
    CHECK_EQ_U64(unfair, 0);
}

static void test_refused(void)
{
    struct ring_shard s[2] = {{"a", 1, 1}, {"a", 1, 1}};
    struct hc_maglev_shard h[2] = {{"a", 1, 1}, {"a", 1, 1}};
    uint32_t table[16];
    struct hc_err err;
    CHECK_EQ_U64(ring_maglev_table(s, 0, 13, RING_SHA1, table), (uint64_t)-EINVAL);
    CHECK_EQ_U64(ring_maglev_table(s, 1, 15, RING_SHA1, table), (uint64_t)-EINVAL); /* 3 x 5 */
    CHECK_EQ_U64(ring_maglev_table(s, 1, 1, RING_SHA1, table), (uint64_t)-EINVAL);
    CHECK_EQ_U64(ring_maglev_table(s, 2, 13, RING_SHA1, table), (uint64_t)-EINVAL); /* twice */
    CHECK_EQ_U64(hc_maglev_table(h, 2, 13, "SHA1", table, &err), (uint64_t)-EINVAL);
    CHECK_EQ_U64(hc_maglev_table(h, 1, 15, "SHA1", table, &err), (uint64_t)-EINVAL);
    s[1] = (struct ring_shard){"b", 1, 0};
    h[1] = (struct hc_maglev_shard){"b", 1, 0};
    CHECK_EQ_U64(ring_maglev_table(s, 2, 13, RING_SHA1, table), (uint64_t)-EINVAL); /* weight 0 */
    CHECK_EQ_U64(hc_maglev_table(h, 2, 13, "SHA1", table, &err), (uint64_t)-EINVAL);
    CHECK_EQ_U64(ring_maglev_prime(2147483647u), 1);
    CHECK_EQ_U64(ring_maglev_prime(65537), 1);
    CHECK_EQ_U64(ring_maglev_prime(65535), 0);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_maglev SOURCE_DIR\n");
        return 2;
    }
    test_worked_example();
    test_ring_of_table();
    test_golden_file(argv[1]);
    test_random_agree();
    test_refused();
    return CHECK_DONE();
}
