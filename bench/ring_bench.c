/* Ring benchmark (docs/performance.md §2): lookups against a SHA-1 floor, md5 placements
 * against libmemcached, ring build time, distribution and movement, peak RSS; every timed
 * placement is checked against a reference. `--check` runs the checks at small sizes only. */
#define OPENSSL_SUPPRESS_DEPRECATED /* SHA1_Transform: the floor is one raw block compression */
#include <libmemcached/memcached.h>
#include <math.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include "bench_util.h"
#include "ring.h"

struct opts {
    int check;        /* correctness only: small sizes, no figures that matter */
    size_t keys;      /* keys per lookup pass */
    int rounds;       /* timed rounds per figure (the median is reported) */
    FILE *json;       /* results, or NULL */
    size_t memory_of; /* --memory N: only measure peak RSS of an N-shard ring */
    const char *only; /* --only ITEM: run one item (lookup, peer, build, build_from, ...) */
};

static int failures;

#define REQUIRE(cond, ...)                                                                         \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            fprintf(stderr, "ring_bench: FAILED: " __VA_ARGS__);                                   \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

/* A ring of n shards named with `fmt` (one %zu), weight 1; exits when the build fails. */
static struct ring *make_ring(enum ring_digest dg, uint32_t vnodes, size_t n, const char *fmt,
                              size_t skip)
{
    char(*ids)[48] = calloc(n + 1, 48);
    struct ring_shard *sh = calloc(n + 1, sizeof(*sh));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == skip)
            continue;
        snprintf(ids[k], 48, fmt, i);
        sh[k] = (struct ring_shard){ids[k], strlen(ids[k]), 1};
        k++;
    }
    struct ring *r;
    struct ring_error err;
    if (ring_build(&r, dg, vnodes, sh, k, &err) != 0) {
        fprintf(stderr, "ring_bench: ring_build: %s\n", err.msg);
        exit(1);
    }
    free(ids);
    free(sh);
    return r;
}

/* The floor: one SHA-1 block compression per key, the key already padded into the block. */
static double floor_pass(const struct bench_keys *k, uint32_t *out)
{
    SHA_CTX c;
    unsigned char block[64];
    SHA1_Init(&c);
    double t0 = bench_now_ns();
    for (size_t i = 0; i < k->n; i++) {
        size_t len = k->len[i];
        memset(block, 0, sizeof(block));
        memcpy(block, k->data + k->off[i], len);
        block[len] = 0x80;
        block[62] = (unsigned char)(len >> 5);
        block[63] = (unsigned char)(len << 3);
        SHA1_Transform(&c, block);
        out[i] = c.h0;
    }
    return (bench_now_ns() - t0) / (double)k->n;
}

static double lookup_pass(const struct ring *r, const struct bench_keys *k, uint32_t *out)
{
    struct ring_placement p;
    double t0 = bench_now_ns();
    for (size_t i = 0; i < k->n; i++) {
        ring_lookup(r, k->data + k->off[i], k->len[i], &p);
        out[i] = p.shard;
    }
    return (bench_now_ns() - t0) / (double)k->n;
}

/* A bound, not a placement: the key hash and then one read of a point picked by it
 * (hash * points / 2^32), the least any lookup that reads the point array once costs. */
static double one_read_pass(const struct ring *r, const struct bench_keys *k, uint32_t *out)
{
    uint64_t n = ring_points_total(r);
    double t0 = bench_now_ns();
    for (size_t i = 0; i < k->n; i++) {
        uint32_t h = ring_hash_key(r, k->data + k->off[i], k->len[i]);
        out[i] = ring_point_at(r, (size_t)((h * n) >> 32)).shard;
    }
    return (bench_now_ns() - t0) / (double)k->n;
}

/* The gateway's path: hash a chunk of keys, then place the chunk with ring_lookup_hashes so
 * the cache misses of neighbouring keys overlap. */
static double batch_pass(const struct ring *r, const struct bench_keys *k, uint32_t *out)
{
    enum { CHUNK = 256 };
    uint32_t hash[CHUNK];
    const char *key[CHUNK];
    size_t len[CHUNK];
    struct ring_placement p[CHUNK];
    double t0 = bench_now_ns();
    for (size_t at = 0; at < k->n; at += CHUNK) {
        size_t m = k->n - at < CHUNK ? k->n - at : CHUNK;
        for (size_t i = 0; i < m; i++) {
            key[i] = k->data + k->off[at + i];
            len[i] = k->len[at + i];
        }
        ring_hash_keys(r, key, len, m, hash);
        ring_lookup_hashes(r, hash, m, p);
        for (size_t i = 0; i < m; i++)
            out[at + i] = p[i].shard;
    }
    return (bench_now_ns() - t0) / (double)k->n;
}

/* The reference placement: one-shot EVP digest and a plain binary search over every point. */
static uint32_t reference_shard(const struct ring_point *pts, size_t n, enum ring_digest dg,
                                const char *key, size_t len)
{
    unsigned char d[EVP_MAX_MD_SIZE];
    EVP_Digest(key, len, d, NULL, dg == RING_MD5 ? EVP_md5() : EVP_sha1(), NULL);
    uint32_t h = (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (pts[mid].value < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return pts[lo == n ? 0 : lo].shard;
}

/* Counts the keys whose timed placement differs from the reference's. */
static size_t verify_placements(const struct ring *r, const struct bench_keys *k,
                                const uint32_t *shard)
{
    size_t n = ring_points_total(r), bad = 0;
    struct ring_point *pts = malloc(n * sizeof(*pts));
    for (size_t i = 0; i < n; i++)
        pts[i] = ring_point_at(r, i);
    for (size_t i = 0; i < k->n; i++)
        bad +=
            reference_shard(pts, n, ring_digest_of(r), k->data + k->off[i], k->len[i]) != shard[i];
    free(pts);
    return bad;
}

/* ring_hash_keys (four MD5s interleaved) equals ring_hash_key and OpenSSL's one-shot digest
 * for every key length 1..80 (one block up to 55 bytes, two above) and long keys among short. */
static void verify_hash_keys(enum ring_digest dg)
{
    struct ring *r = make_ring(dg, 1, 1, "shard-%05zu", SIZE_MAX);
    char text[81 * 81];
    const char *key[81];
    size_t len[81], bad = 0;
    uint32_t got[81];
    for (size_t n = 0; n < 81; n++) {
        len[n] = n % 7 == 3 ? 80 - n % 11 : n + 1 > 80 ? 80 : n + 1;
        key[n] = text + 81 * n;
        for (size_t j = 0; j < len[n]; j++)
            text[81 * n + j] = (char)('a' + (n * 7 + j * 13) % 26);
    }
    ring_hash_keys(r, key, len, 81, got);
    for (size_t n = 0; n < 81; n++) {
        unsigned char d[EVP_MAX_MD_SIZE];
        EVP_Digest(key[n], len[n], d, NULL, dg == RING_MD5 ? EVP_md5() : EVP_sha1(), NULL);
        uint32_t want =
            (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24;
        bad += got[n] != want || ring_hash_key(r, key[n], len[n]) != want;
    }
    REQUIRE(bad == 0, "%s: ring_hash_keys differs from the one-shot digest on %zu keys",
            ring_digest_name(dg), bad);
    ring_free(r);
}

/* The floor must be a real SHA-1: its first word is the key hash, byte-swapped. */
static void verify_floor(const struct ring *r, const struct bench_keys *k)
{
    uint32_t h[1];
    struct bench_keys one = *k;
    size_t bad = 0;
    for (size_t i = 0; i < k->n && i < 1000; i++) {
        one.data = k->data + k->off[i];
        one.off = &(uint32_t){0};
        one.len = &k->len[i];
        one.n = 1;
        floor_pass(&one, h);
        bad += __builtin_bswap32(h[0]) != ring_hash_key(r, k->data + k->off[i], k->len[i]);
    }
    REQUIRE(bad == 0, "the SHA-1 floor disagrees with ring_hash_key on %zu keys", bad);
}

static void json_sep(const struct opts *o, int *first)
{
    if (o->json && !*first)
        fputs(",\n", o->json);
    *first = 0;
}

/* Item 1 at one ring size: the medians of the floor, the batched and the single-key lookups
 * and the one-read bound, and their ratios to the floor timed in the same round. */
static void lookup_size(const struct opts *o, const struct bench_keys *k, size_t shards,
                        uint32_t *out, int *first)
{
    struct ring *r = make_ring(RING_SHA1, 160, shards, "shard-%05zu", SIZE_MAX);
    if (*first)
        verify_floor(r, k);
    double fl[32], lk[32], bt[32], rd[32], ratio[32], ratio1[32], ratio_rd[32];
    size_t bad = 0;
    for (int i = 0; i < o->rounds; i++) {
        fl[i] = floor_pass(k, out);
        lk[i] = lookup_pass(r, k, out);
        if (i == 0)
            bad += verify_placements(r, k, out);
        bt[i] = batch_pass(r, k, out);
        if (i == 0)
            bad += verify_placements(r, k, out);
        rd[i] = one_read_pass(r, k, out);
        ratio[i] = bt[i] / fl[i];
        ratio1[i] = lk[i] / fl[i];
        ratio_rd[i] = rd[i] / fl[i];
    }
    REQUIRE(bad == 0, "%zu shards: %zu placements differ from the reference", shards, bad);
    size_t nr = (size_t)o->rounds;
    double mf = bench_median(fl, nr), ml = bench_median(lk, nr), mb = bench_median(bt, nr);
    double mr = bench_median(ratio, nr), mr1 = bench_median(ratio1, nr);
    double mrd = bench_median(rd, nr), mrr = bench_median(ratio_rd, nr);
    printf("lookup sha1 %5zu shards: %6.1f ns batched (%.2fx floor), %6.1f ns one by one "
           "(%.2fx), floor %6.1f ns, one read %6.1f ns (%.2fx); %zu keys verified\n",
           shards, mb, mr, ml, mr1, mf, mrd, mrr, k->n);
    json_sep(o, first);
    if (o->json)
        fprintf(o->json,
                "  {\"shards\": %zu, \"points\": %zu, \"lookup_ns\": %.2f, \"floor_ns\": %.2f, "
                "\"ratio\": %.3f, \"single_ns\": %.2f, \"single_ratio\": %.3f, "
                "\"one_read_ns\": %.2f, \"one_read_ratio\": %.3f, "
                "\"verified_keys\": %zu, \"mismatches\": %zu}",
                shards, ring_points_total(r), mb, mf, mr, ml, mr1, mrd, mrr, k->n, bad);
    ring_free(r);
}

/* Item 1: ns per lookup and the ratio to the floor at each ring size. */
static void bench_lookups(const struct opts *o, const struct bench_keys *k)
{
    static const size_t full[] = {3, 100, 1000, 10000}, small[] = {3, 100};
    const size_t *sizes = o->check ? small : full;
    size_t nsizes = o->check ? 2 : 4;
    uint32_t *out = malloc(k->n * sizeof(*out));
    int first = 1;
    if (o->json)
        fputs("\"lookup\": [\n", o->json);
    for (size_t s = 0; s < nsizes; s++)
        lookup_size(o, k, sizes[s], out, &first);
    if (o->json)
        fputs("\n],\n", o->json);
    free(out);
}

static memcached_st *make_memcached(size_t n)
{
    memcached_st *mc = memcached_create(NULL);
    memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1);
    for (size_t i = 0; i < n; i++) {
        char host[48];
        snprintf(host, sizeof(host), "cache-%03zu.example", i);
        if (memcached_server_add(mc, host, 11211) != MEMCACHED_SUCCESS) {
            fprintf(stderr, "ring_bench: memcached_server_add %s failed\n", host);
            exit(1);
        }
    }
    return mc;
}

static double memcached_pass(memcached_st *mc, const struct bench_keys *k, uint32_t *out)
{
    double t0 = bench_now_ns();
    for (size_t i = 0; i < k->n; i++)
        out[i] = memcached_generate_hash(mc, k->data + k->off[i], k->len[i]);
    return (bench_now_ns() - t0) / (double)k->n;
}

/* libmemcached's server index -> our shard index, by host name. */
static uint32_t *server_map(memcached_st *mc, const struct ring *r, size_t n)
{
    uint32_t *map = malloc(n * sizeof(*map));
    for (uint32_t i = 0; i < n; i++) {
        const char *name = memcached_server_name(memcached_server_instance_by_position(mc, i));
        for (uint32_t s = 0; s < ring_shard_count(r); s++)
            if (strcmp(ring_shard_id(r, s), name) == 0)
                map[i] = s;
    }
    return map;
}

/* Item 2: our md5 mode against libmemcached's ketama on the same keys and servers. */
static void bench_peer_size(const struct opts *o, const struct bench_keys *k, size_t n,
                            uint32_t *ours, uint32_t *theirs)
{
    memcached_st *mc = make_memcached(n);
    struct ring *r = make_ring(RING_MD5, 160, n, "cache-%03zu.example", SIZE_MAX);
    double us[32], them[32], ratio[32];
    for (int i = 0; i < o->rounds; i++) {
        us[i] = batch_pass(r, k, ours);
        them[i] = memcached_pass(mc, k, theirs);
        ratio[i] = them[i] / us[i];
    }
    uint32_t *map = server_map(mc, r, n);
    size_t same = 0;
    for (size_t i = 0; i < k->n; i++)
        same += map[theirs[i]] == ours[i];
    REQUIRE(same == k->n, "%zu shards: only %zu of %zu placements equal libmemcached's", n, same,
            k->n);
    double mu = bench_median(us, (size_t)o->rounds), mt = bench_median(them, (size_t)o->rounds);
    double mr = bench_median(ratio, (size_t)o->rounds);
    printf("peer md5 %3zu shards: shardgate %6.1f ns, libmemcached %6.1f ns, %.2fx faster; "
           "identical placements %zu of %zu\n",
           n, mu, mt, mr, same, k->n);
    if (o->json)
        fprintf(o->json,
                "  {\"shards\": %zu, \"shardgate_ns\": %.2f, \"libmemcached_ns\": %.2f, "
                "\"speedup\": %.3f, \"identical\": %zu, \"keys\": %zu}",
                n, mu, mt, mr, same, k->n);
    free(map);
    ring_free(r);
    memcached_free(mc);
}

static void bench_peer(const struct opts *o, const struct bench_keys *k)
{
    uint32_t *ours = malloc(k->n * sizeof(*ours)), *theirs = malloc(k->n * sizeof(*theirs));
    if (o->json)
        fputs("\"peer\": [\n", o->json);
    bench_peer_size(o, k, 3, ours, theirs);
    if (o->json)
        fputs(",\n", o->json);
    bench_peer_size(o, k, 99, ours, theirs);
    if (o->json)
        fputs("\n],\n", o->json);
    free(ours);
    free(theirs);
}

/* Item 3: wall time of ring_build for 1,000 and 10,000 shards x 160. */
static void bench_build(const struct opts *o)
{
    static const size_t sizes[] = {1000, 10000};
    int first = 1;
    if (o->json)
        fputs("\"build\": [\n", o->json);
    for (size_t s = 0; s < 2; s++) {
        size_t n = o->check ? sizes[s] / 100 : sizes[s];
        double ms[32], cpu[32];
        for (int i = 0; i < o->rounds; i++) {
            double t0 = bench_now_ns(), c0 = bench_cpu_ns();
            struct ring *r = make_ring(RING_SHA1, 160, n, "shard-%05zu", SIZE_MAX);
            ms[i] = (bench_now_ns() - t0) / 1e6;
            cpu[i] = (bench_cpu_ns() - c0) / 1e6;
            ring_free(r);
        }
        double m = bench_median(ms, (size_t)o->rounds), mc = bench_median(cpu, (size_t)o->rounds);
        printf("build sha1 %5zu shards x 160: %.2f ms wall, %.2f ms CPU\n", n, m, mc);
        json_sep(o, &first);
        if (o->json)
            fprintf(o->json, "  {\"shards\": %zu, \"vnodes\": 160, \"ms\": %.3f, \"cpu_ms\": %.3f}",
                    n, m, mc);
    }
    if (o->json)
        fputs("\n],\n", o->json);
}

/* Keys per shard over precomputed hashes; returns max/mean and writes stddev/mean. */
static double spread(const struct ring *r, const uint32_t *hash, size_t n, double *cv,
                     uint32_t *shard_of)
{
    size_t ns = ring_shard_count(r);
    size_t *count = calloc(ns, sizeof(*count));
    for (size_t i = 0; i < n; i++) {
        struct ring_placement p;
        ring_lookup_hash(r, hash[i], &p);
        shard_of[i] = p.shard;
        count[p.shard]++;
    }
    double mean = (double)n / (double)ns, var = 0, max = 0;
    for (size_t s = 0; s < ns; s++) {
        var += ((double)count[s] - mean) * ((double)count[s] - mean);
        max = (double)count[s] > max ? (double)count[s] : max;
    }
    *cv = sqrt(var / (double)ns) / mean;
    free(count);
    return max / mean;
}

/* Fraction of keys whose shard (by name) differs between two placements; also checks that
 * every moved key involves `changed`, the shard that left or joined. */
static double moved(const struct ring *a, const uint32_t *sa, const struct ring *b,
                    const uint32_t *sb, size_t n, const char *changed)
{
    size_t m = 0, stray = 0;
    for (size_t i = 0; i < n; i++) {
        const char *x = ring_shard_id(a, sa[i]), *y = ring_shard_id(b, sb[i]);
        if (strcmp(x, y) == 0)
            continue;
        m++;
        stray += strcmp(x, changed) != 0 && strcmp(y, changed) != 0;
    }
    REQUIRE(stray == 0, "%zu keys moved between shards that did not change", stray);
    return (double)m / (double)n;
}

static void distribution_one(const struct opts *o, const uint32_t *hash, size_t nkeys, size_t n,
                             uint32_t v, uint32_t *sa, uint32_t *sb)
{
    char gone[48], added[48];
    struct ring *r = make_ring(RING_SHA1, v, n, "shard-%05zu", SIZE_MAX);
    double cv, mx = spread(r, hash, nkeys, &cv, sa);
    struct ring *less = make_ring(RING_SHA1, v, n, "shard-%05zu", n / 2);
    snprintf(gone, sizeof(gone), "shard-%05zu", n / 2);
    spread(less, hash, nkeys, &(double){0}, sb);
    double off = moved(r, sa, less, sb, nkeys, gone);
    struct ring *more = make_ring(RING_SHA1, v, n + 1, "shard-%05zu", SIZE_MAX);
    snprintf(added, sizeof(added), "shard-%05zu", n);
    spread(more, hash, nkeys, &(double){0}, sb);
    double add = moved(r, sa, more, sb, nkeys, added);
    printf("spread %3zu shards V=%3u: max/mean %.3f, stddev/mean %.3f; moved: offline %.4f "
           "(ideal %.4f), added %.4f (ideal %.4f)\n",
           n, v, mx, cv, off, 1.0 / (double)n, add, 1.0 / (double)(n + 1));
    if (o->json)
        fprintf(o->json,
                "  {\"shards\": %zu, \"vnodes\": %u, \"max_over_mean\": %.4f, "
                "\"stddev_over_mean\": %.4f, \"moved_offline\": %.5f, \"ideal_offline\": %.5f, "
                "\"moved_added\": %.5f, \"ideal_added\": %.5f}",
                n, v, mx, cv, off, 1.0 / (double)n, add, 1.0 / (double)(n + 1));
    ring_free(r);
    ring_free(less);
    ring_free(more);
}

/* Item 4: keys per shard and keys moved on one membership change, hashes computed once. */
static void bench_distribution(const struct opts *o, const struct bench_keys *k)
{
    static const size_t sizes[] = {3, 10, 100};
    static const uint32_t vnodes[] = {40, 160, 640};
    uint32_t *hash = malloc(k->n * sizeof(*hash)), *sa = malloc(k->n * sizeof(*sa));
    uint32_t *sb = malloc(k->n * sizeof(*sb));
    struct ring *r = make_ring(RING_SHA1, 1, 1, "shard-%05zu", SIZE_MAX);
    for (size_t i = 0; i < k->n; i++)
        hash[i] = ring_hash_key(r, k->data + k->off[i], k->len[i]);
    ring_free(r);
    int first = 1;
    if (o->json)
        fputs("\"distribution\": [\n", o->json);
    for (size_t s = 0; s < 3; s++)
        for (size_t v = 0; v < 3; v++) {
            json_sep(o, &first);
            distribution_one(o, hash, k->n, sizes[s], vnodes[v], sa, sb);
        }
    if (o->json)
        fputs("\n],\n", o->json);
    free(hash);
    free(sa);
    free(sb);
}

/* Item 7: peak RSS of a process that builds and holds an N-shard ring, nothing else. */
static int measure_memory(const struct opts *o)
{
    long before = bench_status_kb("VmHWM");
    struct ring *r = make_ring(RING_SHA1, 160, o->memory_of, "shard-%05zu", SIZE_MAX);
    long after = bench_status_kb("VmHWM"), rss = bench_status_kb("VmRSS");
    printf("memory %zu shards x 160 (%zu points): VmHWM %ld kB (before build %ld kB), VmRSS %ld "
           "kB\n",
           o->memory_of, ring_points_total(r), after, before, rss);
    if (o->json)
        fprintf(o->json,
                "{\"shards\": %zu, \"points\": %zu, \"vmhwm_kb\": %ld, \"vmhwm_before_kb\": %ld, "
                "\"vmrss_kb\": %ld}\n",
                o->memory_of, ring_points_total(r), after, before, rss);
    ring_free(r);
    return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){0, 1000000, 5, NULL, 0, NULL};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--check") == 0) {
            o->check = 1;
            o->keys = 20000;
            o->rounds = 1;
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            o->rounds = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--keys") == 0 && i + 1 < argc) {
            o->keys = strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--memory") == 0 && i + 1 < argc) {
            o->memory_of = strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            o->only = argv[++i];
        } else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
            o->json = fopen(argv[++i], "w");
            if (!o->json)
                return -1;
        } else {
            return -1;
        }
    }
    return o->rounds >= 1 && o->rounds <= 32 && o->keys >= 1 ? 0 : -1;
}

/* Item 3b (the reload switch, docs/decisions.md §6): wall time of ring_build_from at 10,000
 * x 160, each round from the previous round's ring, after a change like reload_load.py's (one
 * of the first five shards offline, another at weight 2); each ring is checked equal to the
 * ring built from scratch (untimed). */
static void bench_build_from(const struct opts *o)
{
    size_t n = o->check ? 100 : 10000;
    char(*ids)[16] = calloc(n, 16);
    struct ring_shard *sh = calloc(n, sizeof(*sh));
    struct ring *prev = make_ring(RING_SHA1, 160, n, "shard-%05zu", SIZE_MAX), *next, *full;
    struct ring_error err;
    double ms[32];
    for (int i = 0; i < o->rounds; i++) {
        size_t k = 0, off = (size_t)i % 5, heavy = (off + 1) % 5;
        for (size_t j = 0; j < n; j++) {
            snprintf(ids[j], 16, "shard-%05zu", j);
            if (j != off)
                sh[k++] = (struct ring_shard){ids[j], strlen(ids[j]), j == heavy ? 2 : 1};
        }
        double t0 = bench_now_ns();
        REQUIRE(ring_build_from(&next, prev, RING_SHA1, 160, sh, k, &err) == 0, "%s", err.msg);
        ms[i] = (bench_now_ns() - t0) / 1e6;
        REQUIRE(ring_build(&full, RING_SHA1, 160, sh, k, &err) == 0, "%s", err.msg);
        REQUIRE(strcmp(ring_id(next), ring_id(full)) == 0 &&
                    ring_points_total(next) == ring_points_total(full) &&
                    memcmp(ring_points(next), ring_points(full),
                           ring_points_total(full) * sizeof(struct ring_point)) == 0,
                "build_from round %d: not the ring built from scratch", i);
        ring_free(full);
        ring_free(prev);
        prev = next;
    }
    printf("build_from sha1 %5zu shards x 160 (one offline, one weight 2): %.2f ms wall "
           "(median of %d)\n",
           n, bench_median(ms, (size_t)o->rounds), o->rounds);
    ring_free(prev);
    free(ids);
    free(sh);
}

/* Single-key lookups by a Maglev table and by jump: the key's 64 bits (ring_digest_u64), then
 * one read of the table, or the jump over `n` buckets. */
static double maglev_pass(const struct bench_keys *k, const uint32_t *table, uint32_t m,
                          uint32_t *out)
{
    double t0 = bench_now_ns();
    for (size_t i = 0; i < k->n; i++)
        out[i] = table[ring_digest_u64(RING_SHA1, k->data + k->off[i], k->len[i]) % m];
    return (bench_now_ns() - t0) / (double)k->n;
}

static double jump_pass(const struct bench_keys *k, int32_t n, uint32_t *out)
{
    double t0 = bench_now_ns();
    for (size_t i = 0; i < k->n; i++)
        out[i] = (uint32_t)ring_jump(ring_digest_u64(RING_SHA1, k->data + k->off[i], k->len[i]), n);
    return (bench_now_ns() - t0) / (double)k->n;
}

/* Batched lookups by a Maglev ring (ring_lookup_keys, as dispatch places a batch): chunks of
 * 256 keys, each chunk's slots found and prefetched before the table is read. */
static double maglev_batched_pass(const struct bench_keys *k, const struct ring *r,
                                  struct ring_placement *out)
{
    enum { CHUNK = 256 };
    const char *key[CHUNK];
    size_t len[CHUNK];
    double t0 = bench_now_ns();
    for (size_t at = 0; at < k->n; at += CHUNK) {
        size_t c = k->n - at < CHUNK ? k->n - at : CHUNK;
        for (size_t i = 0; i < c; i++) {
            key[i] = k->data + k->off[at + i];
            len[i] = k->len[at + i];
        }
        ring_lookup_keys(r, key, len, c, out + at);
    }
    return (bench_now_ns() - t0) / (double)k->n;
}

/* Their ratios to the SHA-1 floor timed in the same round, medians of the rounds; the batched
 * answers checked against the one-by-one ones. */
static void bench_table_lookups(const struct opts *o, const struct bench_keys *k, size_t n,
                                const uint32_t *table, uint32_t m, const struct ring *r)
{
    uint32_t *out = malloc(k->n * sizeof(*out));
    struct ring_placement *placed = malloc(k->n * sizeof(*placed));
    REQUIRE(out != NULL && placed != NULL, "out of memory");
    double fl[32], mg[32], mb[32], jp[32], rmg[32], rmb[32], rjp[32];
    for (int i = 0; i < o->rounds; i++) {
        fl[i] = floor_pass(k, out);
        mg[i] = maglev_pass(k, table, m, out);
        mb[i] = maglev_batched_pass(k, r, placed);
        jp[i] = jump_pass(k, (int32_t)n, out);
        rmg[i] = mg[i] / fl[i];
        rmb[i] = mb[i] / fl[i];
        rjp[i] = jp[i] / fl[i];
    }
    maglev_pass(k, table, m, out);
    for (size_t i = 0; i < k->n; i++)
        REQUIRE(placed[i].shard == out[i], "batched maglev lookup %zu differs", i);
    size_t nr = (size_t)o->rounds;
    printf("maglev lookup %5zu shards: %6.1f ns one by one (%.2fx floor), %6.1f ns batched "
           "(%.2fx); jump %6.1f ns (%.2fx); floor %6.1f ns\n",
           n, bench_median(mg, nr), bench_median(rmg, nr), bench_median(mb, nr),
           bench_median(rmb, nr), bench_median(jp, nr), bench_median(rjp, nr),
           bench_median(fl, nr));
    free(out);
    free(placed);
}

/* The Maglev table's build (docs/contract.md §11): wall time of ring_maglev_table at 10,000
 * shards x weight 1 with 1,000,003 slots (a hundred a shard), the table's memory, and how
 * evenly it is shared (the most and fewest slots a shard owns); then lookups by it and by
 * jump against the SHA-1 floor. */
static void bench_maglev(const struct opts *o, const struct bench_keys *k)
{
    size_t n = o->check ? 100 : 10000;
    uint32_t m = o->check ? 10007 : 1000003;
    char(*ids)[16] = calloc(n, 16);
    struct ring_shard *sh = calloc(n, sizeof(*sh));
    uint32_t *table = malloc((size_t)m * sizeof(*table)), *owned = calloc(n, sizeof(*owned));
    REQUIRE(ids && sh && table && owned, "out of memory");
    for (size_t j = 0; j < n; j++) {
        snprintf(ids[j], 16, "shard-%05zu", j);
        sh[j] = (struct ring_shard){ids[j], strlen(ids[j]), 1};
    }
    double ms[32];
    for (int i = 0; i < o->rounds; i++) {
        double t0 = bench_now_ns();
        REQUIRE(ring_maglev_table(sh, n, m, RING_SHA1, table) == 0, "maglev round %d", i);
        ms[i] = (bench_now_ns() - t0) / 1e6;
    }
    uint32_t most = 0, fewest = UINT32_MAX;
    for (uint32_t s = 0; s < m; s++)
        owned[table[s]]++;
    for (size_t j = 0; j < n; j++) {
        most = owned[j] > most ? owned[j] : most;
        fewest = owned[j] < fewest ? owned[j] : fewest;
    }
    printf("maglev sha1 %5zu shards x 1, %u slots: %.2f ms wall (median of %d), table %zu kB, "
           "slots a shard %u..%u\n",
           n, m, bench_median(ms, (size_t)o->rounds), o->rounds, (size_t)m * sizeof(*table) / 1024,
           fewest, most);
    struct ring *r;
    struct ring_error err;
    REQUIRE(ring_build_maglev(&r, RING_SHA1, m, sh, n, &err) == 0, "%s", err.msg);
    /* ids "shard-NNNNN" are listed in id order: the ring's shard indexes are the table's */
    REQUIRE(memcmp(ring_table(r), table, (size_t)m * sizeof(*table)) == 0, "maglev ring table");
    bench_table_lookups(o, k, n, table, m, r);
    ring_free(r);
    free(ids);
    free(sh);
    free(table);
    free(owned);
}

/* Lookups on a table ring, one by one (ring_lookup) and batched (ring_lookup_keys), against the
 * SHA-1 floor of the same round, medians of the rounds; the batched answers checked. */
static void bench_ring_lookups(const struct opts *o, const struct bench_keys *k, const char *what,
                               const struct ring *r)
{
    uint32_t *out = malloc(k->n * sizeof(*out));
    struct ring_placement *one = malloc(k->n * sizeof(*one)), *many = malloc(k->n * sizeof(*many));
    REQUIRE(out && one && many, "out of memory");
    double fl[32], sg[32], bt[32], rsg[32], rbt[32];
    for (int i = 0; i < o->rounds; i++) {
        fl[i] = floor_pass(k, out);
        double t0 = bench_now_ns();
        for (size_t j = 0; j < k->n; j++)
            ring_lookup(r, k->data + k->off[j], k->len[j], &one[j]);
        sg[i] = (bench_now_ns() - t0) / (double)k->n;
        bt[i] = maglev_batched_pass(k, r, many);
        rsg[i] = sg[i] / fl[i];
        rbt[i] = bt[i] / fl[i];
    }
    for (size_t j = 0; j < k->n; j++)
        REQUIRE(one[j].shard == many[j].shard && one[j].point == many[j].point,
                "batched %s lookup %zu differs", what, j);
    size_t nr = (size_t)o->rounds;
    printf("%s lookup: %6.1f ns one by one (%.2fx floor), %6.1f ns batched (%.2fx); floor %6.1f "
           "ns\n",
           what, bench_median(sg, nr), bench_median(rsg, nr), bench_median(bt, nr),
           bench_median(rbt, nr), bench_median(fl, nr));
    free(out);
    free(one);
    free(many);
}

/* The jump placement (docs/contract.md §10): wall time of ring_build_jump at 10,000 shards x
 * weight 1 over 2^20 slots (about a hundred a shard; the ketama ring of 1.6 million points
 * built, then walked with the slot starts), the table's memory, how evenly it is shared, then
 * lookups at 2^20 slots and at 2^14 (a table that stays in the core's cache). */
static void bench_jump(const struct opts *o, const struct bench_keys *k)
{
    size_t n = o->check ? 100 : 10000;
    uint32_t slots = o->check ? 16384 : 1048576;
    char(*ids)[16] = calloc(n, 16);
    struct ring_shard *sh = calloc(n, sizeof(*sh));
    uint32_t *owned = calloc(n, sizeof(*owned));
    REQUIRE(ids && sh && owned, "out of memory");
    for (size_t j = 0; j < n; j++) {
        snprintf(ids[j], 16, "shard-%05zu", j);
        sh[j] = (struct ring_shard){ids[j], strlen(ids[j]), 1};
    }
    double ms[32];
    struct ring *r = NULL;
    struct ring_error err;
    for (int i = 0; i < o->rounds; i++) {
        ring_free(r);
        double t0 = bench_now_ns();
        REQUIRE(ring_build_jump(&r, RING_SHA1, slots, sh, n, &err) == 0, "%s", err.msg);
        ms[i] = (bench_now_ns() - t0) / 1e6;
    }
    uint32_t most = 0, fewest = UINT32_MAX;
    for (uint32_t s = 0; s < slots; s++)
        owned[ring_table(r)[s]]++;
    for (size_t j = 0; j < n; j++) {
        most = owned[j] > most ? owned[j] : most;
        fewest = owned[j] < fewest ? owned[j] : fewest;
    }
    printf("jump sha1 %5zu shards x 1, %u slots: %.2f ms wall (median of %d), table %zu kB, "
           "slots a shard %u..%u\n",
           n, slots, bench_median(ms, (size_t)o->rounds), o->rounds,
           (size_t)slots * sizeof(uint32_t) / 1024, fewest, most);
    bench_ring_lookups(o, k, "jump, 2^20 slots", r);
    ring_free(r);
    REQUIRE(ring_build_jump(&r, RING_SHA1, 16384, sh, n, &err) == 0, "%s", err.msg);
    bench_ring_lookups(o, k, "jump, 2^14 slots", r);
    ring_free(r);
    free(ids);
    free(sh);
    free(owned);
}

/* Whether item `name` runs: all do unless --only names one. */
static int wanted(const struct opts *o, const char *name)
{
    return !o->only || strcmp(o->only, name) == 0;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (parse_opts(argc, argv, &o) != 0) {
        fprintf(
            stderr,
            "usage: ring_bench [--check] [--rounds N<=32] [--keys N] [--json FILE] "
            "[--memory SHARDS] [--only lookup|peer|build|build_from|distribution|maglev|jump]\n");
        return 64;
    }
    if (o.memory_of)
        return measure_memory(&o);
    struct bench_keys k;
    bench_keys_make(&k, o.keys, 0x5eed);
    if (o.json)
        fprintf(o.json, "{\"keys\": %zu, \"rounds\": %d, \"check\": %s,\n", k.n, o.rounds,
                o.check ? "true" : "false");
    verify_hash_keys(RING_MD5);
    verify_hash_keys(RING_SHA1);
    if (wanted(&o, "lookup"))
        bench_lookups(&o, &k);
    if (wanted(&o, "peer"))
        bench_peer(&o, &k);
    if (wanted(&o, "build"))
        bench_build(&o);
    if (wanted(&o, "build_from"))
        bench_build_from(&o);
    if (wanted(&o, "distribution"))
        bench_distribution(&o, &k);
    if (wanted(&o, "maglev"))
        bench_maglev(&o, &k);
    if (wanted(&o, "jump"))
        bench_jump(&o, &k);
    if (o.json) {
        fprintf(o.json, "\"failures\": %d}\n", failures);
        fclose(o.json);
    }
    bench_keys_free(&k);
    printf("ring_bench: %s\n", failures ? "FAILED" : "all placements verified");
    return failures ? 1 : 0;
}
