/* The ketama ring (docs/contract.md "The ring"): a shard of weight w owns vnodes * w points, the
 * LE32 words of H(id "-" g) for g = 0, 1, ..., in (value, shard id, vnode) order; a key lands on
 * the first point >= LE32(H(key)[0..3]), or wraps to the first (md5: libmemcached's ketama).
 * This file: the build entry, the shard list, the ring id and the accessors. */
#define OPENSSL_SUPPRESS_DEPRECATED /* SHA1_Init/Update/Final for the ring id, as in hash.c */
#include "ring_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

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

int ring_algorithm_parse(const char *name, enum ring_algorithm *out)
{
    if (strcmp(name, "ketama") == 0)
        *out = RING_KETAMA;
    else if (strcmp(name, "maglev") == 0)
        *out = RING_MAGLEV;
    else if (strcmp(name, "jump") == 0)
        *out = RING_JUMP;
    else
        return -EINVAL;
    return 0;
}

const char *ring_algorithm_name(enum ring_algorithm algorithm)
{
    return algorithm == RING_MAGLEV ? "maglev" : algorithm == RING_JUMP ? "jump" : "ketama";
}

static int slot_compare(const void *pa, const void *pb)
{
    const struct ring_shard_slot *a = pa, *b = pb;
    return ring__id_compare(a->id, a->id_len, b->id, b->id_len);
}

int ring__copy_shards(struct ring *ring, const struct ring_shard *shards, size_t n,
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
        if (ring__id_compare(a->id, a->id_len, b->id, b->id_len) == 0) {
            snprintf(err->msg, sizeof(err->msg), "duplicate shard id \"%s\"", b->id);
            return -EINVAL;
        }
    }
    return 0;
}

/* The ring id: SHA-1 of "<algorithm>\n<hash>\n<vnodes or slots>\n" and "<id> <weight>\n" per
 * shard. */
void ring__compute_id(struct ring *ring)
{
    static const char hex[] = "0123456789abcdef";
    char line[RING_ID_PREFIX_MAX + 16];
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA_CTX ctx;
    SHA1_Init(&ctx);
    int n = snprintf(line, sizeof(line), "%s\n%s\n%u\n", ring_algorithm_name(ring->algorithm),
                     ring_digest_name(ring->digest),
                     ring->algorithm == RING_KETAMA ? ring->vnodes : ring->table_size);
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

struct ring *ring__new(enum ring_algorithm algorithm, enum ring_digest digest,
                       struct ring_error *err)
{
    struct ring *ring = calloc(1, sizeof(*ring));
    if (!ring) {
        snprintf(err->msg, sizeof(err->msg), "out of memory");
        return NULL;
    }
    ring->algorithm = algorithm;
    ring->digest = digest;
    return ring;
}

int ring__finish(struct ring *ring, int rc, struct ring **out, struct ring_error *err)
{
    if (rc == -ENOMEM)
        snprintf(err->msg, sizeof(err->msg), "out of memory");
    if (rc != 0) {
        ring_free(ring);
        return rc;
    }
    ring__compute_id(ring);
    *out = ring;
    return 0;
}

/* ring_build and ring_build_from: the points reused from `prev` when it has the same digest and
 * vnodes, else built from scratch; the same ring either way. */
static int build(struct ring **out, const struct ring *prev, enum ring_digest digest,
                 uint32_t vnodes, const struct ring_shard *shards, size_t n, struct ring_error *err)
{
    *out = NULL;
    if (vnodes < 1 || vnodes > RING_VNODES_MAX) {
        snprintf(err->msg, sizeof(err->msg), "vnodes %u is not 1..%d", vnodes, RING_VNODES_MAX);
        return -EINVAL;
    }
    struct ring *ring = ring__new(RING_KETAMA, digest, err);
    if (!ring)
        return -ENOMEM;
    ring->vnodes = vnodes;
    int rc = ring__copy_shards(ring, shards, n, err);
    if (rc == 0) {
        int reuse = prev && prev->digest == digest && prev->vnodes == vnodes;
        rc = reuse ? ring__build_points_from(ring, prev) : 1;
        if (rc == 1)
            rc = ring__build_points(ring);
        if (rc == -EINVAL)
            snprintf(err->msg, sizeof(err->msg), "more than %u points", UINT32_MAX);
    }
    return ring__finish(ring, rc, out, err);
}

int ring_build(struct ring **out, enum ring_digest digest, uint32_t vnodes,
               const struct ring_shard *shards, size_t n, struct ring_error *err)
{
    return build(out, NULL, digest, vnodes, shards, n, err);
}

int ring_build_from(struct ring **out, const struct ring *prev, enum ring_digest digest,
                    uint32_t vnodes, const struct ring_shard *shards, size_t n,
                    struct ring_error *err)
{
    return build(out, prev, digest, vnodes, shards, n, err);
}

void ring_free(struct ring *ring)
{
    if (!ring)
        return;
    for (size_t i = 0; i < ring->nshards; i++)
        free(ring->shards[i].id);
    free(ring->shards);
    ring__big_free(ring->points, ring->points_bytes);
    ring__big_free(ring->buckets, ring->buckets_bytes);
    free(ring->coarse);
    free(ring->table);
    ring_free(ring->under);
    free(ring);
}

enum ring_algorithm ring_algorithm_of(const struct ring *ring)
{
    return ring->algorithm;
}

uint32_t ring_table_size(const struct ring *ring)
{
    return ring->table_size;
}

const uint32_t *ring_table(const struct ring *ring)
{
    return ring->table;
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

const struct ring_point *ring_points(const struct ring *ring)
{
    return ring->points;
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
