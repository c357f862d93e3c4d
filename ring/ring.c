/* The ketama ring (DESIGN.md §4). Each online shard s of weight w gets vnodes*w points:
 * digest d = H(id "-" g) for g = 0, 1, ... yields points g*W+j (W = digest bytes / 4), each
 * LE32(d[4j..4j+3]). Points are ordered by (value, shard id bytes, vnode); a key hashed to
 * LE32(H(key)[0..3]) lands on the first point >= its hash, or wraps to point 0. With md5 this
 * is libmemcached's MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED placement at 160 points per server. */
#define OPENSSL_SUPPRESS_DEPRECATED /* see digest_* below for why the low-level API */
#include "ring.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/md5.h>
#include <openssl/sha.h>

#define RING_ID_PREFIX_MAX 64
#define VNODE_LABEL_MAX (64 + 1 + 10)

struct ring_entry {
    uint32_t shard;
    uint32_t vnode;
};

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
    uint32_t *values;           /* point values in ring order: the binary-searched array */
    struct ring_entry *entries; /* shard and vnode of each point, parallel to values */
    unsigned bucket_shift;      /* a hash's bucket is hash >> bucket_shift (64-bit shift) */
    uint32_t *buckets;          /* buckets[b]: first point whose bucket >= b; 2^bits + 1 */
    char id[RING_ID_HEX_LEN + 1];
};

/* The digests use OpenSSL's low-level SHA1_* / MD5_* functions on a stack context. In
 * OpenSSL 3 the one-shot SHA1() and EVP_Digest() fetch the algorithm on every call (about
 * 300 ns); EVP with a pre-fetched EVP_MD needs a context per thread. The low-level calls go
 * straight to the block function, allocate nothing and are thread-safe, which is what the
 * lookup path needs. They are deprecated, not removed, in OpenSSL 3.0. */
static size_t digest_len(enum ring_digest digest)
{
    return digest == RING_MD5 ? MD5_DIGEST_LENGTH : SHA_DIGEST_LENGTH;
}

static void digest_compute(enum ring_digest digest, const void *data, size_t len,
                           unsigned char *out)
{
    if (digest == RING_MD5) {
        MD5_CTX ctx;
        MD5_Init(&ctx);
        MD5_Update(&ctx, data, len);
        MD5_Final(out, &ctx);
    } else {
        SHA_CTX ctx;
        SHA1_Init(&ctx);
        SHA1_Update(&ctx, data, len);
        SHA1_Final(out, &ctx);
    }
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
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

/* Appends the points of shard `rank` in vnode order to `out`; returns how many. */
static size_t shard_points(const struct ring *ring, uint32_t rank, struct ring_point *out)
{
    const struct ring_shard_slot *s = &ring->shards[rank];
    size_t words = digest_len(ring->digest) / 4;
    size_t count = (size_t)ring->vnodes * s->weight;
    unsigned char label[VNODE_LABEL_MAX], digest[SHA_DIGEST_LENGTH];
    memcpy(label, s->id, s->id_len);
    label[s->id_len] = '-';
    for (size_t k = 0, g = 0; k < count; g++) {
        int n = snprintf((char *)label + s->id_len + 1, 11, "%zu", g);
        digest_compute(ring->digest, label, s->id_len + 1 + (size_t)n, digest);
        for (size_t j = 0; j < words && k < count; j++, k++)
            out[k] = (struct ring_point){le32(digest + 4 * j), rank, (uint32_t)k};
    }
    return count;
}

/* Stable LSD radix sort by value, two 16-bit passes. The points arrive in (shard id, vnode)
 * order, so stability yields exactly the (value, shard id, vnode) order of §4. */
static int sort_points(struct ring_point *points, size_t n)
{
    struct ring_point *tmp = malloc((n ? n : 1) * sizeof(*tmp));
    size_t *count = malloc(65536 * sizeof(*count));
    if (!tmp || !count) {
        free(tmp);
        free(count);
        return -ENOMEM;
    }
    for (unsigned shift = 0; shift < 32; shift += 16) {
        memset(count, 0, 65536 * sizeof(*count));
        for (size_t i = 0; i < n; i++)
            count[(points[i].value >> shift) & 0xffff]++;
        for (size_t b = 0, sum = 0; b < 65536; b++) {
            size_t c = count[b];
            count[b] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            tmp[count[(points[i].value >> shift) & 0xffff]++] = points[i];
        memcpy(points, tmp, n * sizeof(*points));
    }
    free(tmp);
    free(count);
    return 0;
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

static int build_buckets(struct ring *ring)
{
    unsigned bits = bucket_bits(ring->npoints);
    size_t nb = (size_t)1 << bits;
    ring->bucket_shift = 32 - bits;
    ring->buckets = malloc((nb + 1) * sizeof(*ring->buckets));
    if (!ring->buckets)
        return -ENOMEM;
    size_t i = 0;
    for (size_t b = 0; b <= nb; b++) {
        while (i < ring->npoints && ((uint64_t)ring->values[i] >> ring->bucket_shift) < b)
            i++;
        ring->buckets[b] = (uint32_t)i;
    }
    ring->buckets[nb] = (uint32_t)ring->npoints;
    return 0;
}

static int build_points(struct ring *ring)
{
    size_t total = 0;
    for (size_t i = 0; i < ring->nshards; i++)
        total += (size_t)ring->vnodes * ring->shards[i].weight;
    if (total > UINT32_MAX)
        return -EINVAL;
    struct ring_point *points = malloc((total ? total : 1) * sizeof(*points));
    ring->values = malloc((total ? total : 1) * sizeof(*ring->values));
    ring->entries = malloc((total ? total : 1) * sizeof(*ring->entries));
    if (!points || !ring->values || !ring->entries) {
        free(points);
        return -ENOMEM;
    }
    size_t n = 0;
    for (uint32_t rank = 0; rank < ring->nshards; rank++)
        n += shard_points(ring, rank, points + n);
    int rc = sort_points(points, n);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        ring->values[i] = points[i].value;
        ring->entries[i] = (struct ring_entry){points[i].shard, points[i].vnode};
    }
    free(points);
    ring->npoints = n;
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
    if (rc == 0)
        rc = build_buckets(ring);
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
    free(ring->values);
    free(ring->entries);
    free(ring->buckets);
    free(ring);
}

uint32_t ring_hash_key(const struct ring *ring, const void *key, size_t len)
{
    unsigned char digest[SHA_DIGEST_LENGTH];
    digest_compute(ring->digest, key, len, digest);
    return le32(digest);
}

int ring_lookup_hash(const struct ring *ring, uint32_t hash, struct ring_placement *out)
{
    if (ring->npoints == 0)
        return -ENOENT;
    uint64_t bucket = (uint64_t)hash >> ring->bucket_shift;
    size_t lo = ring->buckets[bucket], hi = ring->buckets[bucket + 1];
    /* First value >= hash in [lo, hi); if none, it is hi (the next bucket's first point). */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ring->values[mid] < hash)
            lo = mid + 1;
        else
            hi = mid;
    }
    out->wrapped = lo == ring->npoints;
    if (out->wrapped)
        lo = 0;
    out->hash = hash;
    out->point = ring->values[lo];
    out->shard = ring->entries[lo].shard;
    out->vnode = ring->entries[lo].vnode;
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
    return (struct ring_point){ring->values[i], ring->entries[i].shard, ring->entries[i].vnode};
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
