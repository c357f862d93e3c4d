/* libring: the ketama ring of docs/contract.md "The ring", a pure library (no I/O, no logging). */
#ifndef SHARDGATE_RING_H
#define SHARDGATE_RING_H

#include <stddef.h>
#include <stdint.h>

enum ring_digest { RING_SHA1, RING_MD5 };

/* DISPATCH_HASH_RING (docs/contract.md §1): ketama places on points (docs/contract.md §3),
 * maglev and jump on the slots of a table (docs/contract.md §11, §10). */
enum ring_algorithm { RING_KETAMA, RING_MAGLEV, RING_JUMP };

#define RING_VNODES_MAX 4096
#define RING_WEIGHT_MAX 1000
#define RING_ID_HEX_LEN 40
#define RING_MAGLEV_TABLE_MAX 16777213 /* the largest prime below 2^24 */
#define RING_JUMP_SLOTS_MAX 16777216   /* 2^24 */
#define RING_JUMP_VNODES                                                                           \
    160 /* points per unit of weight of the ring a jump table is drawn from                        \
         */

struct ring;

/* One online shard as the caller knows it. The ring copies `id`. */
struct ring_shard {
    const char *id;
    size_t id_len;
    uint32_t weight;
};

/* Where a key lands. `shard` indexes the ring's shards in id order (ring_shard_id). On a Maglev
 * ring `point` is the key's slot, `hash` the low 32 bits of the key's 64, vnode and wrapped 0. */
struct ring_placement {
    uint32_t hash;
    uint32_t point;
    uint32_t vnode;
    uint32_t shard;
    int wrapped; /* 1 when the hash was above every point ("wrap"), else 0 ("ring") */
};

/* One point of the ring, in ring order. */
struct ring_point {
    uint32_t value;
    uint32_t shard;
    uint32_t vnode;
};

struct ring_error {
    char msg[256];
};

/* Returns the digest named `name` ("sha1" or "md5") in *out. Returns 0, or -EINVAL. */
int ring_digest_parse(const char *name, enum ring_digest *out);

/* The contract name of a digest: "sha1" or "md5". */
const char *ring_digest_name(enum ring_digest digest);

/* Returns the algorithm named `name` ("ketama", "maglev" or "jump") in *out. Returns 0, or
 * -EINVAL. */
int ring_algorithm_parse(const char *name, enum ring_algorithm *out);

/* The contract name of an algorithm: "ketama", "maglev" or "jump". */
const char *ring_algorithm_name(enum ring_algorithm algorithm);

/* Builds the ring of `n` online shards with `vnodes` points per unit of weight. Shards may
 * come in any order; ids must be unique. An empty shard list builds an empty ring. Returns 0
 * and the ring in *out, or -EINVAL (bad vnodes, weight or duplicate id) / -ENOMEM with a
 * message in err. Rings of 65,536 points or more are built with one helper thread, joined
 * before it returns (if it cannot be started, the build runs on the caller's thread alone). */
int ring_build(struct ring **out, enum ring_digest digest, uint32_t vnodes,
               const struct ring_shard *shards, size_t n, struct ring_error *err);

/* Builds the same ring as ring_build, byte for byte, from the previous ring `prev` (or NULL):
 * when it has the same digest and vnodes, only the points `prev` lacks are hashed (new shards,
 * the extra points of a weight increase) and merged with the ones it has, which costs one pass
 * over its points instead of hashing and sorting them all (docs/decisions.md §6). `prev` is
 * only read (it may be in use by other threads). Returns as ring_build. */
int ring_build_from(struct ring **out, const struct ring *prev, enum ring_digest digest,
                    uint32_t vnodes, const struct ring_shard *shards, size_t n,
                    struct ring_error *err);

/* Builds the Maglev ring of `n` online shards (any order, ids unique) over a table of
 * `table_size` slots (docs/contract.md §11): a prime 2..RING_MAGLEV_TABLE_MAX, at least n. An
 * empty shard list builds an empty ring. Returns 0 and the ring in *out, or -EINVAL / -ENOMEM
 * with a message in err. It has no points (ring_points_total is 0): ring_lookup places keys, and
 * ring_table gives the slots. */
int ring_build_maglev(struct ring **out, enum ring_digest digest, uint32_t table_size,
                      const struct ring_shard *shards, size_t n, struct ring_error *err);

/* Builds the jump ring of `n` online shards (any order, ids unique) over `slots` slots
 * (docs/contract.md §10): 1..RING_JUMP_SLOTS_MAX. A key's slot is ring_jump of its 64 bits; slot
 * s belongs to the shard owning hash value floor(s * 2^32 / slots) on the ketama ring of the same
 * shards with RING_JUMP_VNODES points per unit of weight. An empty shard list builds an empty
 * ring. Returns 0 and the ring in *out, or -EINVAL / -ENOMEM with a message in err. Like a
 * Maglev ring it has no points: ring_table gives the slots. */
int ring_build_jump(struct ring **out, enum ring_digest digest, uint32_t slots,
                    const struct ring_shard *shards, size_t n, struct ring_error *err);

/* The same ring, byte for byte, with the ketama ring under the table built from the one under
 * `prev` when `prev` is a jump ring (ring_build_from: only the points it lacks are hashed), so a
 * reload does not hash every point again. A jump ring keeps that ketama ring (about 12 bytes a
 * point) for this. `prev` is only read. Returns as ring_build_jump. */
int ring_build_jump_from(struct ring **out, const struct ring *prev, enum ring_digest digest,
                         uint32_t slots, const struct ring_shard *shards, size_t n,
                         struct ring_error *err);

void ring_free(struct ring *ring);

enum ring_algorithm ring_algorithm_of(const struct ring *ring);

/* A Maglev or jump ring's slots (0 for ketama), and the shard (id order) owning each, NULL when
 * empty. */
uint32_t ring_table_size(const struct ring *ring);
const uint32_t *ring_table(const struct ring *ring);

/* The key hash (docs/contract.md "The ring"): LE32 of the first four digest bytes. */
uint32_t ring_hash_key(const struct ring *ring, const void *key, size_t len);

/* The key hashes of n keys: hashes[i] = ring_hash_key(keys[i], lens[i]). With md5 it hashes
 * four keys at a time (interleaved, about twice the throughput of one by one). */
void ring_hash_keys(const struct ring *ring, const char *const *keys, const size_t *lens, size_t n,
                    uint32_t *hashes);

/* Places `key` (ketama or Maglev). Allocates nothing. Returns 0, or -ENOENT when the ring is
 * empty. */
int ring_lookup(const struct ring *ring, const void *key, size_t len, struct ring_placement *out);

/* Ketama only: places a key whose hash is already known. ring_lookup and this call search for one
 * key at a time with one trip to memory (a small table, then the points around an interpolated
 * guess); for many keys, ring_lookup_hashes is faster. Returns 0, or -ENOENT when the ring is
 * empty. */
int ring_lookup_hash(const struct ring *ring, uint32_t hash, struct ring_placement *out);

/* Ketama only: places n keys whose hashes are known: out[i] is what ring_lookup_hash(hashes[i])
 * gives. Faster than n single calls on large rings: it prefetches the bucket and the points of keys
 * a few places ahead, so their cache misses overlap. Allocates nothing. Returns 0, or -ENOENT
 * when the ring is empty. */
int ring_lookup_hashes(const struct ring *ring, const uint32_t *hashes, size_t n,
                       struct ring_placement *out);

/* Places n keys (ketama or Maglev): out[i] is what ring_lookup(keys[i], lens[i]) gives. On a
 * Maglev ring each slot is found first and its table entry prefetched, then all are read, so
 * the reads of a chunk overlap. Allocates nothing. Returns 0, or -ENOENT when the ring is
 * empty. */
int ring_lookup_keys(const struct ring *ring, const char *const *keys, const size_t *lens, size_t n,
                     struct ring_placement *out);

enum ring_digest ring_digest_of(const struct ring *ring);
uint32_t ring_vnodes(const struct ring *ring);

/* Number of points: the sum over shards of vnodes * weight. */
size_t ring_points_total(const struct ring *ring);

/* The i-th point in ring order, 0 <= i < ring_points_total(). */
struct ring_point ring_point_at(const struct ring *ring, size_t i);

/* All ring_points_total() points in ring order, read-only, valid until ring_free: for walks
 * over every point (a movement plan) without a call per point. */
const struct ring_point *ring_points(const struct ring *ring);

size_t ring_shard_count(const struct ring *ring);
const char *ring_shard_id(const struct ring *ring, uint32_t shard);
size_t ring_shard_id_len(const struct ring *ring, uint32_t shard);
uint32_t ring_shard_weight(const struct ring *ring, uint32_t shard);

/* The ring id (docs/contract.md "The ring") as 40 lowercase hex digits and a NUL. */
const char *ring_id(const struct ring *ring);

/* Jump consistent hash (docs/contract.md §10): the bucket in [0, buckets) of `key`, or -1 when
 * buckets < 1. */
int32_t ring_jump(uint64_t key, int32_t buckets);

/* 1 when `m` is a prime, the size a Maglev table must have (docs/contract.md §11). */
int ring_maglev_prime(uint32_t m);

/* The Maglev table of `n` shards (ids unique, weights at least 1), listed in any order, with `m`
 * slots (docs/contract.md §11): table[s] is the index in `shards` of the shard that owns slot s (m
 * entries). Returns 0,
 * or -EINVAL (no shard, an id twice, a weight 0, or m not a prime below 2^31), or -ENOMEM. */
int ring_maglev_table(const struct ring_shard *shards, size_t n, uint32_t m,
                      enum ring_digest digest, uint32_t *table);

/* A key's 64 bits for a table or jump: the first 8 bytes of its digest, little-endian; their
 * low 32 bits are the ketama key hash (docs/contract.md §11). */
uint64_t ring_digest_u64(enum ring_digest digest, const void *data, size_t len);

#endif
