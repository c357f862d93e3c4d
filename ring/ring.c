/* The ketama ring (docs/contract.md §3). Each online shard s of weight w gets vnodes*w points:
 * digest d = H(id "-" g) for g = 0, 1, ... yields points g*W+j (W = digest bytes / 4), each
 * LE32(d[4j..4j+3]). Points are ordered by (value, shard id bytes, vnode); a key hashed to
 * LE32(H(key)[0..3]) lands on the first point >= its hash, or wraps to point 0. With md5 this
 * is libmemcached's MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED placement at 160 points per server. */
#define OPENSSL_SUPPRESS_DEPRECATED /* see digest_* below for why the low-level API */
#define _DEFAULT_SOURCE             /* MADV_HUGEPAGE */
#include "ring.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>

#include <openssl/md5.h>
#include <openssl/sha.h>

#define RING_ID_PREFIX_MAX 64
#define VNODE_LABEL_MAX (64 + 1 + 10)
#define ONE_BLOCK_MAX 55 /* longest message whose padding fits one 64-byte block */
#define HUGE_PAGE ((size_t)2 << 20)

struct ring_shard_slot {
    char *id;
    size_t id_len;
    uint32_t weight;
};

struct ring {
    enum ring_digest digest;
    uint32_t vnodes;
    size_t nshards;
    struct ring_shard_slot *shards; /* in id order */
    size_t npoints;
    struct ring_point *points; /* in ring order; value, shard and vnode share a cache line */
    unsigned bucket_shift;     /* a hash's bucket is hash >> bucket_shift (64-bit shift) */
    uint32_t *buckets;         /* buckets[b]: first point whose bucket >= b; 2^bits + 1 */
    char id[RING_ID_HEX_LEN + 1];
};

/* The digests use OpenSSL's low-level SHA1_* / MD5_* functions on a stack context. In
 * OpenSSL 3 the one-shot SHA1() and EVP_Digest() fetch the algorithm on every call (about
 * 300 ns); EVP with a pre-fetched EVP_MD needs a context per thread. The low-level calls go
 * straight to the block function, allocate nothing and are thread-safe, which is what the
 * lookup path needs. They are deprecated, not removed, in OpenSSL 3.0.
 *
 * Keys and vnode labels are short, so most messages fit one block with their padding: those
 * are padded here and compressed with one SHA1_Transform / MD5_Transform call, which skips
 * the Update/Final bookkeeping (a third of the cost of hashing a 20-byte key). Every caller
 * wants the digest as LE32 words (docs/contract.md §3), so the digest is returned in that form:
 * `w[j]` is LE32(d[4j..4j+3]), W words. */
static size_t digest_len(enum ring_digest digest)
{
    return digest == RING_MD5 ? MD5_DIGEST_LENGTH : SHA_DIGEST_LENGTH;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* SHA-1 state words are big-endian digest words; MD5's are little-endian. */
static void sha1_one_block(const void *data, size_t len, uint32_t *w)
{
    unsigned char block[64] = {0};
    memcpy(block, data, len);
    block[len] = 0x80;
    block[62] = (unsigned char)(len >> 5);
    block[63] = (unsigned char)(len << 3);
    SHA_CTX ctx;
    SHA1_Init(&ctx);
    SHA1_Transform(&ctx, block);
    const uint32_t h[5] = {ctx.h0, ctx.h1, ctx.h2, ctx.h3, ctx.h4};
    for (size_t j = 0; j < 5; j++)
        w[j] = __builtin_bswap32(h[j]);
}

static void md5_one_block(const void *data, size_t len, uint32_t *w)
{
    unsigned char block[64] = {0};
    memcpy(block, data, len);
    block[len] = 0x80;
    block[56] = (unsigned char)(len << 3);
    block[57] = (unsigned char)(len >> 5);
    MD5_CTX ctx;
    MD5_Init(&ctx);
    MD5_Transform(&ctx, block);
    w[0] = ctx.A;
    w[1] = ctx.B;
    w[2] = ctx.C;
    w[3] = ctx.D;
}

/* Messages longer than one block go through Update/Final. */
static void sha1_words(const void *data, size_t len, uint32_t *w)
{
    unsigned char out[SHA_DIGEST_LENGTH];
    SHA_CTX ctx;
    if (len <= ONE_BLOCK_MAX) {
        sha1_one_block(data, len, w);
        return;
    }
    SHA1_Init(&ctx);
    SHA1_Update(&ctx, data, len);
    SHA1_Final(out, &ctx);
    for (size_t j = 0; j < SHA_DIGEST_LENGTH / 4; j++)
        w[j] = le32(out + 4 * j);
}

static void md5_words(const void *data, size_t len, uint32_t *w)
{
    unsigned char out[MD5_DIGEST_LENGTH];
    MD5_CTX ctx;
    if (len <= ONE_BLOCK_MAX) {
        md5_one_block(data, len, w);
        return;
    }
    MD5_Init(&ctx);
    MD5_Update(&ctx, data, len);
    MD5_Final(out, &ctx);
    for (size_t j = 0; j < MD5_DIGEST_LENGTH / 4; j++)
        w[j] = le32(out + 4 * j);
}

/* The one place the contract's digest is chosen, for points and keys alike. */
static void digest_words(enum ring_digest digest, const void *data, size_t len, uint32_t *w)
{
    if (digest == RING_MD5) {
        md5_words(data, len, w);
    } else {
        sha1_words(data, len, w);
    }
}

/* MD5 of four one-block messages at once. MD5 is one long dependency chain per message, so a
 * single digest leaves most of the core idle; four independent chains side by side (the lane
 * loops below, which compilers also turn into SIMD) finish in little more time than one. This
 * is RFC 1321's compression function, checked against OpenSSL's MD5 in the bench's --check
 * mode and against libmemcached on a million keys. Only the first state word is returned:
 * it is the key hash (LE32 of digest bytes 0..3). */
#define MD5_LANES 4

/* RFC 1321's round functions and one step, applied to the four lanes' registers x0..x3. */
#define MD5_F(b, c, d) ((((c) ^ (d)) & (b)) ^ (d))
#define MD5_G(b, c, d) ((((b) ^ (c)) & (d)) ^ (c))
#define MD5_H(b, c, d) ((b) ^ (c) ^ (d))
#define MD5_I(b, c, d) ((c) ^ ((b) | ~(d)))
#define MD5_STEP(f, a, b, c, d, x, t, s)                                                           \
    do {                                                                                           \
        (a) += MD5_##f((b), (c), (d)) + (x) + (t);                                                 \
        (a) = ((a) << (s) | (a) >> (32 - (s))) + (b);                                              \
    } while (0)
#define MD5_STEP4(f, a, b, c, d, k, t, s)                                                          \
    do {                                                                                           \
        MD5_STEP(f, a##0, b##0, c##0, d##0, m[k][0], t, s);                                        \
        MD5_STEP(f, a##1, b##1, c##1, d##1, m[k][1], t, s);                                        \
        MD5_STEP(f, a##2, b##2, c##2, d##2, m[k][2], t, s);                                        \
        MD5_STEP(f, a##3, b##3, c##3, d##3, m[k][3], t, s);                                        \
    } while (0)

/* The 64 steps on four lanes; m[k][l] is message word k of lane l. Returns A of each lane. */
static void md5_rounds(const uint32_t (*m)[MD5_LANES], uint32_t *out)
{
    uint32_t a0 = 0x67452301, a1 = a0, a2 = a0, a3 = a0;
    uint32_t b0 = 0xefcdab89, b1 = b0, b2 = b0, b3 = b0;
    uint32_t c0 = 0x98badcfe, c1 = c0, c2 = c0, c3 = c0;
    uint32_t d0 = 0x10325476, d1 = d0, d2 = d0, d3 = d0;
    MD5_STEP4(F, a, b, c, d, 0, 0xd76aa478, 7);
    MD5_STEP4(F, d, a, b, c, 1, 0xe8c7b756, 12);
    MD5_STEP4(F, c, d, a, b, 2, 0x242070db, 17);
    MD5_STEP4(F, b, c, d, a, 3, 0xc1bdceee, 22);
    MD5_STEP4(F, a, b, c, d, 4, 0xf57c0faf, 7);
    MD5_STEP4(F, d, a, b, c, 5, 0x4787c62a, 12);
    MD5_STEP4(F, c, d, a, b, 6, 0xa8304613, 17);
    MD5_STEP4(F, b, c, d, a, 7, 0xfd469501, 22);
    MD5_STEP4(F, a, b, c, d, 8, 0x698098d8, 7);
    MD5_STEP4(F, d, a, b, c, 9, 0x8b44f7af, 12);
    MD5_STEP4(F, c, d, a, b, 10, 0xffff5bb1, 17);
    MD5_STEP4(F, b, c, d, a, 11, 0x895cd7be, 22);
    MD5_STEP4(F, a, b, c, d, 12, 0x6b901122, 7);
    MD5_STEP4(F, d, a, b, c, 13, 0xfd987193, 12);
    MD5_STEP4(F, c, d, a, b, 14, 0xa679438e, 17);
    MD5_STEP4(F, b, c, d, a, 15, 0x49b40821, 22);
    MD5_STEP4(G, a, b, c, d, 1, 0xf61e2562, 5);
    MD5_STEP4(G, d, a, b, c, 6, 0xc040b340, 9);
    MD5_STEP4(G, c, d, a, b, 11, 0x265e5a51, 14);
    MD5_STEP4(G, b, c, d, a, 0, 0xe9b6c7aa, 20);
    MD5_STEP4(G, a, b, c, d, 5, 0xd62f105d, 5);
    MD5_STEP4(G, d, a, b, c, 10, 0x02441453, 9);
    MD5_STEP4(G, c, d, a, b, 15, 0xd8a1e681, 14);
    MD5_STEP4(G, b, c, d, a, 4, 0xe7d3fbc8, 20);
    MD5_STEP4(G, a, b, c, d, 9, 0x21e1cde6, 5);
    MD5_STEP4(G, d, a, b, c, 14, 0xc33707d6, 9);
    MD5_STEP4(G, c, d, a, b, 3, 0xf4d50d87, 14);
    MD5_STEP4(G, b, c, d, a, 8, 0x455a14ed, 20);
    MD5_STEP4(G, a, b, c, d, 13, 0xa9e3e905, 5);
    MD5_STEP4(G, d, a, b, c, 2, 0xfcefa3f8, 9);
    MD5_STEP4(G, c, d, a, b, 7, 0x676f02d9, 14);
    MD5_STEP4(G, b, c, d, a, 12, 0x8d2a4c8a, 20);
    MD5_STEP4(H, a, b, c, d, 5, 0xfffa3942, 4);
    MD5_STEP4(H, d, a, b, c, 8, 0x8771f681, 11);
    MD5_STEP4(H, c, d, a, b, 11, 0x6d9d6122, 16);
    MD5_STEP4(H, b, c, d, a, 14, 0xfde5380c, 23);
    MD5_STEP4(H, a, b, c, d, 1, 0xa4beea44, 4);
    MD5_STEP4(H, d, a, b, c, 4, 0x4bdecfa9, 11);
    MD5_STEP4(H, c, d, a, b, 7, 0xf6bb4b60, 16);
    MD5_STEP4(H, b, c, d, a, 10, 0xbebfbc70, 23);
    MD5_STEP4(H, a, b, c, d, 13, 0x289b7ec6, 4);
    MD5_STEP4(H, d, a, b, c, 0, 0xeaa127fa, 11);
    MD5_STEP4(H, c, d, a, b, 3, 0xd4ef3085, 16);
    MD5_STEP4(H, b, c, d, a, 6, 0x04881d05, 23);
    MD5_STEP4(H, a, b, c, d, 9, 0xd9d4d039, 4);
    MD5_STEP4(H, d, a, b, c, 12, 0xe6db99e5, 11);
    MD5_STEP4(H, c, d, a, b, 15, 0x1fa27cf8, 16);
    MD5_STEP4(H, b, c, d, a, 2, 0xc4ac5665, 23);
    MD5_STEP4(I, a, b, c, d, 0, 0xf4292244, 6);
    MD5_STEP4(I, d, a, b, c, 7, 0x432aff97, 10);
    MD5_STEP4(I, c, d, a, b, 14, 0xab9423a7, 15);
    MD5_STEP4(I, b, c, d, a, 5, 0xfc93a039, 21);
    MD5_STEP4(I, a, b, c, d, 12, 0x655b59c3, 6);
    MD5_STEP4(I, d, a, b, c, 3, 0x8f0ccc92, 10);
    MD5_STEP4(I, c, d, a, b, 10, 0xffeff47d, 15);
    MD5_STEP4(I, b, c, d, a, 1, 0x85845dd1, 21);
    MD5_STEP4(I, a, b, c, d, 8, 0x6fa87e4f, 6);
    MD5_STEP4(I, d, a, b, c, 15, 0xfe2ce6e0, 10);
    MD5_STEP4(I, c, d, a, b, 6, 0xa3014314, 15);
    MD5_STEP4(I, b, c, d, a, 13, 0x4e0811a1, 21);
    MD5_STEP4(I, a, b, c, d, 4, 0xf7537e82, 6);
    MD5_STEP4(I, d, a, b, c, 11, 0xbd3af235, 10);
    MD5_STEP4(I, c, d, a, b, 2, 0x2ad7d2bb, 15);
    MD5_STEP4(I, b, c, d, a, 9, 0xeb86d391, 21);
    out[0] = a0 + 0x67452301;
    out[1] = a1 + 0x67452301;
    out[2] = a2 + 0x67452301;
    out[3] = a3 + 0x67452301;
}

/* The key hashes of four keys of at most ONE_BLOCK_MAX bytes each. */
static void md5_hash4(const char *const *key, const size_t *len, uint32_t *out)
{
    uint32_t m[16][MD5_LANES];
    for (int l = 0; l < MD5_LANES; l++) {
        unsigned char block[64] = {0};
        memcpy(block, key[l], len[l]);
        block[len[l]] = 0x80;
        block[56] = (unsigned char)(len[l] << 3);
        block[57] = (unsigned char)(len[l] >> 5);
        for (int k = 0; k < 16; k++)
            m[k][l] = le32(block + 4 * k);
    }
    md5_rounds((const uint32_t(*)[MD5_LANES])m, out);
}

/* Large arrays (the points and buckets of big rings) go on 2 MiB-aligned memory marked for
 * transparent huge pages: a lookup on a 10,000-shard ring touches two random lines in 20 MB,
 * and with 4 KiB pages each touch also misses the TLB. The hint is best effort. */
static void *big_alloc(size_t bytes)
{
    if (bytes < HUGE_PAGE)
        return malloc(bytes ? bytes : 1);
    void *p = NULL;
    size_t rounded = (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    if (posix_memalign(&p, HUGE_PAGE, rounded) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, rounded, MADV_HUGEPAGE);
#endif
    return p;
}

int ring_digest_parse(const char *name, enum ring_digest *out)
{
    if (strcmp(name, "sha1") == 0)
        *out = RING_SHA1;
    else if (strcmp(name, "md5") == 0)
        *out = RING_MD5;
    else
        return -EINVAL;
    return 0;
}

const char *ring_digest_name(enum ring_digest digest)
{
    return digest == RING_MD5 ? "md5" : "sha1";
}

/* Shard ids compare bytewise, a prefix before the longer id. */
static int id_compare(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c != 0)
        return c;
    return (alen > blen) - (alen < blen);
}

static int slot_compare(const void *pa, const void *pb)
{
    const struct ring_shard_slot *a = pa, *b = pb;
    return id_compare(a->id, a->id_len, b->id, b->id_len);
}

static int copy_shards(struct ring *ring, const struct ring_shard *shards, size_t n,
                       struct ring_error *err)
{
    ring->shards = calloc(n ? n : 1, sizeof(*ring->shards));
    if (!ring->shards)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (shards[i].weight < 1 || shards[i].weight > RING_WEIGHT_MAX) {
            snprintf(err->msg, sizeof(err->msg), "shard %zu: weight %u is not 1..%d", i,
                     shards[i].weight, RING_WEIGHT_MAX);
            return -EINVAL;
        }
        if (shards[i].id_len == 0 || shards[i].id_len > RING_ID_PREFIX_MAX) {
            snprintf(err->msg, sizeof(err->msg), "shard %zu: id length is not 1..%d", i,
                     RING_ID_PREFIX_MAX);
            return -EINVAL;
        }
        ring->shards[i].id = malloc(shards[i].id_len + 1);
        if (!ring->shards[i].id)
            return -ENOMEM;
        memcpy(ring->shards[i].id, shards[i].id, shards[i].id_len);
        ring->shards[i].id[shards[i].id_len] = '\0';
        ring->shards[i].id_len = shards[i].id_len;
        ring->shards[i].weight = shards[i].weight;
        ring->nshards = i + 1;
    }
    qsort(ring->shards, n, sizeof(*ring->shards), slot_compare);
    for (size_t i = 1; i < n; i++) {
        const struct ring_shard_slot *a = &ring->shards[i - 1], *b = &ring->shards[i];
        if (id_compare(a->id, a->id_len, b->id, b->id_len) == 0) {
            snprintf(err->msg, sizeof(err->msg), "duplicate shard id \"%s\"", b->id);
            return -EINVAL;
        }
    }
    return 0;
}

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

/* Appends the points of shard `rank` in vnode order to `out` and counts them by their top
 * TOP_BITS bits in `top`; returns how many. */
static size_t shard_points(const struct ring *ring, uint32_t rank, struct ring_point *out,
                           uint32_t *top)
{
    const struct ring_shard_slot *s = &ring->shards[rank];
    size_t words = digest_len(ring->digest) / 4;
    size_t count = (size_t)ring->vnodes * s->weight;
    char label[VNODE_LABEL_MAX + 10];
    uint32_t w[5];
    memcpy(label, s->id, s->id_len);
    label[s->id_len] = '-';
    for (size_t k = 0, g = 0; k < count; g++) {
        size_t n = put_decimal(label + s->id_len + 1, g);
        digest_words(ring->digest, label, s->id_len + 1 + n, w);
        for (size_t j = 0; j < words && k < count; j++, k++) {
            out[k] = (struct ring_point){w[j], rank, (uint32_t)k};
            top[w[j] >> (32 - TOP_BITS)]++;
        }
    }
    return count;
}

/* The sort of the docs/contract.md §3 order is a stable radix sort by value: one MSD pass by the
 * top 11 bits into a scratch array, then an LSD sort of each group (about 800 points at 10,000
 * shards: it stays in L1) by the low 21 bits back into the points. Only the first pass scatters
 * across the whole array, and to 2048 streams, which the write-combining buffers and the TLB can
 * follow; two global 16-bit passes (65536 streams) cost three times as much. The points are
 * generated in (shard id, vnode) order, so stability yields exactly the (value, shard id,
 * vnode) order of docs/contract.md §3.
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

/* Sorts one top group of m points from `src` into `dst` by the low 21 bits of the value. */
static void sort_group(const struct ring_point *src, struct ring_point *dst, size_t m,
                       struct ring_point *s1, struct ring_point *s2)
{
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

static int build_points(struct ring *ring)
{
    size_t total = 0, half = 0;
    for (size_t i = 0; i < ring->nshards; i++)
        total += (size_t)ring->vnodes * ring->shards[i].weight;
    if (total > UINT32_MAX)
        return -EINVAL;
    unsigned bits = bucket_bits(total);
    size_t nb = (size_t)1 << bits;
    ring->bucket_shift = 32 - bits;
    ring->points = big_alloc(total * sizeof(*ring->points));
    ring->buckets = big_alloc((nb + 1) * sizeof(*ring->buckets));
    struct build_half *h = calloc(2, sizeof(*h));
    uint32_t *group_end = malloc(TOP_GROUPS * sizeof(*group_end));
    struct ring_point *tmp = big_alloc(total * sizeof(*tmp));
    int rc = -ENOMEM;
    if (!ring->points || !ring->buckets || !h || !group_end || !tmp)
        goto out;
    int parallel = total >= PARALLEL_MIN_POINTS;

    /* Step 1: generate and count the points, shards split in two halves by point count. */
    uint32_t split = 0;
    while (split < ring->nshards && 2 * half < total)
        half += (size_t)ring->vnodes * ring->shards[split++].weight;
    for (int i = 0; i < 2; i++) {
        h[i].ring = ring;
        h[i].tmp = tmp;
        h[i].group_end = group_end;
    }
    h[0].rank_lo = 0, h[0].rank_hi = split, h[0].at = 0;
    h[1].rank_lo = split, h[1].rank_hi = (uint32_t)ring->nshards, h[1].at = half;
    run_halves(half_generate, &h[0], &h[1], parallel);
    if (h[1].made && h[0].made != h[1].at) { /* fewer points than planned: close the gap */
        memmove(ring->points + h[0].made, ring->points + h[1].at,
                h[1].made * sizeof(*ring->points));
        h[1].at = h[0].made;
    }
    size_t n = h[0].made + h[1].made;
    ring->npoints = n;

    /* Step 2: each half's scatter offsets in each group, the first half's first. */
    size_t most = 0;
    for (uint32_t g = 0, sum = 0; g < TOP_GROUPS; g++) {
        uint32_t c0 = h[0].top[g], c1 = h[1].top[g];
        h[0].top[g] = sum;
        h[1].top[g] = sum + c0;
        sum += c0 + c1;
        group_end[g] = sum;
        most = c0 + c1 > most ? c0 + c1 : most;
    }
    run_halves(half_scatter, &h[0], &h[1], parallel);

    /* Step 3: sort each group back into the points and fill its buckets. */
    uint32_t gsplit = 0;
    while (gsplit < TOP_GROUPS && 2 * (size_t)group_end[gsplit] < n)
        gsplit++;
    h[0].group_lo = 0, h[0].group_hi = gsplit;
    h[1].group_lo = gsplit, h[1].group_hi = TOP_GROUPS;
    for (int i = 0; i < 2; i++) {
        h[i].most = most ? most : 1;
        h[i].scratch = malloc(2 * h[i].most * sizeof(*h[i].scratch));
    }
    if (!h[0].scratch || !h[1].scratch)
        goto out;
    if (bits >= TOP_BITS) { /* each group owns whole buckets */
        run_halves(half_sort, &h[0], &h[1], parallel && gsplit < TOP_GROUPS);
    } else { /* a small ring */
        for (uint32_t g = 0; g < TOP_GROUPS; g++) {
            size_t lo = g ? group_end[g - 1] : 0;
            sort_group(tmp + lo, ring->points + lo, group_end[g] - lo, h[0].scratch,
                       h[0].scratch + h[0].most);
        }
        fill_buckets(ring, ring->points, 0, n, 0, nb);
    }
    ring->buckets[nb] = (uint32_t)n;
    rc = 0;
out:
    if (h) {
        free(h[0].scratch);
        free(h[1].scratch);
    }
    free(h);
    free(group_end);
    free(tmp);
    return rc;
}

/* The ring id: SHA-1 of "ketama\n<hash>\n<vnodes>\n" and "<id> <weight>\n" per shard. */
static void compute_id(struct ring *ring)
{
    static const char hex[] = "0123456789abcdef";
    char line[RING_ID_PREFIX_MAX + 16];
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA_CTX ctx;
    SHA1_Init(&ctx);
    int n = snprintf(line, sizeof(line), "ketama\n%s\n%u\n", ring_digest_name(ring->digest),
                     ring->vnodes);
    SHA1_Update(&ctx, line, (size_t)n);
    for (size_t i = 0; i < ring->nshards; i++) {
        n = snprintf(line, sizeof(line), "%s %u\n", ring->shards[i].id, ring->shards[i].weight);
        SHA1_Update(&ctx, line, (size_t)n);
    }
    SHA1_Final(digest, &ctx);
    for (size_t i = 0; i < SHA_DIGEST_LENGTH; i++) {
        ring->id[2 * i] = hex[digest[i] >> 4];
        ring->id[2 * i + 1] = hex[digest[i] & 15];
    }
    ring->id[RING_ID_HEX_LEN] = '\0';
}

int ring_build(struct ring **out, enum ring_digest digest, uint32_t vnodes,
               const struct ring_shard *shards, size_t n, struct ring_error *err)
{
    *out = NULL;
    if (vnodes < 1 || vnodes > RING_VNODES_MAX) {
        snprintf(err->msg, sizeof(err->msg), "vnodes %u is not 1..%d", vnodes, RING_VNODES_MAX);
        return -EINVAL;
    }
    struct ring *ring = calloc(1, sizeof(*ring));
    if (!ring) {
        snprintf(err->msg, sizeof(err->msg), "out of memory");
        return -ENOMEM;
    }
    ring->digest = digest;
    ring->vnodes = vnodes;
    int rc = copy_shards(ring, shards, n, err);
    if (rc == 0) {
        rc = build_points(ring);
        if (rc == -EINVAL)
            snprintf(err->msg, sizeof(err->msg), "more than %u points", UINT32_MAX);
    }
    if (rc == -ENOMEM)
        snprintf(err->msg, sizeof(err->msg), "out of memory");
    if (rc != 0) {
        ring_free(ring);
        return rc;
    }
    compute_id(ring);
    *out = ring;
    return 0;
}

void ring_free(struct ring *ring)
{
    if (!ring)
        return;
    for (size_t i = 0; i < ring->nshards; i++)
        free(ring->shards[i].id);
    free(ring->shards);
    free(ring->points);
    free(ring->buckets);
    free(ring);
}

uint32_t ring_hash_key(const struct ring *ring, const void *key, size_t len)
{
    uint32_t w[5];
    digest_words(ring->digest, key, len, w);
    return w[0]; /* the key hash */
}

void ring_hash_keys(const struct ring *ring, const char *const *keys, const size_t *lens, size_t n,
                    uint32_t *hashes)
{
    size_t i = 0;
    while (ring->digest == RING_MD5 && i + MD5_LANES <= n) {
        size_t l = 0;
        while (l < MD5_LANES && lens[i + l] <= ONE_BLOCK_MAX)
            l++;
        if (l < MD5_LANES) { /* a long key: hash it alone and go on after it */
            hashes[i + l] = ring_hash_key(ring, keys[i + l], lens[i + l]);
            for (size_t j = 0; j < l; j++)
                hashes[i + j] = ring_hash_key(ring, keys[i + j], lens[i + j]);
            i += l + 1;
            continue;
        }
        md5_hash4(keys + i, lens + i, hashes + i);
        i += MD5_LANES;
    }
    for (; i < n; i++)
        hashes[i] = ring_hash_key(ring, keys[i], lens[i]);
}

/* The first point >= hash, searched within the hash's bucket. */
static void place(const struct ring *ring, uint32_t hash, struct ring_placement *out)
{
    uint64_t bucket = (uint64_t)hash >> ring->bucket_shift;
    size_t lo = ring->buckets[bucket], hi = ring->buckets[bucket + 1];
    /* First value >= hash in [lo, hi); if none, it is hi (the next bucket's first point). */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ring->points[mid].value < hash)
            lo = mid + 1;
        else
            hi = mid;
    }
    out->wrapped = lo == ring->npoints;
    if (out->wrapped)
        lo = 0;
    out->hash = hash;
    out->point = ring->points[lo].value;
    out->shard = ring->points[lo].shard;
    out->vnode = ring->points[lo].vnode;
}

int ring_lookup_hash(const struct ring *ring, uint32_t hash, struct ring_placement *out)
{
    if (ring->npoints == 0)
        return -ENOENT;
    place(ring, hash, out);
    return 0;
}

/* How far ahead ring_lookup_hashes prefetches: buckets 2*AHEAD keys ahead, points AHEAD. */
#define AHEAD 8

static void prefetch_points(const struct ring *ring, uint32_t hash)
{
    uint64_t bucket = (uint64_t)hash >> ring->bucket_shift;
    const struct ring_point *p = ring->points + ring->buckets[bucket];
    __builtin_prefetch(p);
    __builtin_prefetch(p + 4);
}

int ring_lookup_hashes(const struct ring *ring, const uint32_t *hashes, size_t n,
                       struct ring_placement *out)
{
    if (ring->npoints == 0)
        return -ENOENT;
    for (size_t i = 0; i < n; i++) {
        if (i + 2 * AHEAD < n)
            __builtin_prefetch(
                &ring->buckets[(uint64_t)hashes[i + 2 * AHEAD] >> ring->bucket_shift]);
        if (i + AHEAD < n)
            prefetch_points(ring, hashes[i + AHEAD]);
        place(ring, hashes[i], &out[i]);
    }
    return 0;
}

int ring_lookup(const struct ring *ring, const void *key, size_t len, struct ring_placement *out)
{
    if (ring->npoints == 0)
        return -ENOENT;
    return ring_lookup_hash(ring, ring_hash_key(ring, key, len), out);
}

enum ring_digest ring_digest_of(const struct ring *ring)
{
    return ring->digest;
}

uint32_t ring_vnodes(const struct ring *ring)
{
    return ring->vnodes;
}

size_t ring_points_total(const struct ring *ring)
{
    return ring->npoints;
}

struct ring_point ring_point_at(const struct ring *ring, size_t i)
{
    return ring->points[i];
}

size_t ring_shard_count(const struct ring *ring)
{
    return ring->nshards;
}

const char *ring_shard_id(const struct ring *ring, uint32_t shard)
{
    return ring->shards[shard].id;
}

size_t ring_shard_id_len(const struct ring *ring, uint32_t shard)
{
    return ring->shards[shard].id_len;
}

uint32_t ring_shard_weight(const struct ring *ring, uint32_t shard)
{
    return ring->shards[shard].weight;
}

const char *ring_id(const struct ring *ring)
{
    return ring->id;
}
