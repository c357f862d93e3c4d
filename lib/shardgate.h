/* libshardgate: shardgate's placement in a process of your own (docs/tools.md §13).
 *
 * The same code as the gateway's (ring/ and gateway/core/): a key placed here lands where
 * `shardgate serve` places it, and a batch placed here gives the receipt bytes the gateway
 * answers. A topology is the contract (docs/contract.md §1) and the membership (docs/contract.md
 * §2) loaded together, with its ring built; once loaded it is never changed, so any number of
 * threads may read it at once. Every call that can fail returns a shardgate_status and, when given
 * an error, fills its message, which names the file and line or the JSON path.
 *
 * Preconditions: every pointer argument is non-NULL, except `err` (may be NULL: no message),
 * `key` when `len` is 0, and the `t`/`p` of the two free functions (NULL frees nothing). A NULL
 * elsewhere is SHARDGATE_INVALID with the message "<function>: <argument> is NULL" (the error's
 * own `status` set alike), never a crash; shardgate_ring_id and shardgate_epoch_id of NULL are
 * NULL. */
#ifndef SHARDGATE_H
#define SHARDGATE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHARDGATE_API_VERSION 1

typedef enum shardgate_status {
    SHARDGATE_OK = 0,
    SHARDGATE_INVALID = 1,  /* a contract, membership or batch the gateway would refuse */
    SHARDGATE_NO_SHARD = 2, /* no online shard: the ring is empty */
    SHARDGATE_REFUSED = 3,  /* the batch puts a shard over capacity under policy reject */
    SHARDGATE_IO = 4,       /* a file cannot be read */
    SHARDGATE_NO_MEMORY = 5,
} shardgate_status;

typedef struct shardgate_error {
    shardgate_status status;
    char message[800]; /* room for any message the gateway writes (768 bytes) */
} shardgate_error;

typedef struct shardgate_topology shardgate_topology;

/* Where a key lands (docs/contract.md §3): its shard (valid as long as the topology), the key's
 * 32-bit hash, the ring point and the shard's vnode it landed on, and 1 when the hash was above
 * every point and wrapped to the first. Under DISPATCH_HASH_RING=maglev or jump
 * (docs/contract.md §11, §10) `point` is the key's slot, `hash` the low 32 bits of its 64, vnode
 * and wrapped 0. */
typedef struct shardgate_placement {
    const char *shard;
    size_t shard_len;
    uint32_t hash, point, vnode;
    int wrapped;
} shardgate_placement;

/* The library's version, "MAJOR.MINOR.PATCH". */
const char *shardgate_version(void);

/* Loads a contract file and a shards file. */
shardgate_status shardgate_topology_load(const char *contract_path, const char *shards_path,
                                         shardgate_topology **out, shardgate_error *err);

/* The same from memory: `contract` in the contract file's format, `shards` a shards document. */
shardgate_status shardgate_topology_parse(const char *contract, size_t contract_len,
                                          const char *shards, size_t shards_len,
                                          shardgate_topology **out, shardgate_error *err);

void shardgate_topology_free(shardgate_topology *t);

/* The ring's id (docs/contract.md §6) and the epoch's (docs/contract.md §7): 40 hex digits. */
const char *shardgate_ring_id(const shardgate_topology *t);
const char *shardgate_epoch_id(const shardgate_topology *t);

/* Places a key of `len` bytes. SHARDGATE_NO_SHARD when no shard is online. */
shardgate_status shardgate_lookup(const shardgate_topology *t, const void *key, size_t len,
                                  shardgate_placement *out);

/* Places a batch (its JSON, docs/contract.md §4) and returns the receipt's exact bytes and a
 * newline in *receipt (free with shardgate_free): what POST /v1/batches answers for it. A
 * receipt that is not ok (a shard over capacity under report) is still SHARDGATE_OK: read its
 * "ok". */
shardgate_status shardgate_place(const shardgate_topology *t, const char *batch, size_t len,
                                 char **receipt, size_t *receipt_len, shardgate_error *err);

/* The movement plan from `from` to `to` (docs/contract.md §8) as the JSON line `shardgate plan`
 * prints, in *plan (free with shardgate_free). */
shardgate_status shardgate_plan(const shardgate_topology *from, const shardgate_topology *to,
                                char **plan, size_t *plan_len, shardgate_error *err);

/* The same plan with every range of hash values that moves, from whom to whom (docs/contract.md
 * §8): what `shardgate plan --ranges` prints, in *moves (free with shardgate_free). */
shardgate_status shardgate_moves(const shardgate_topology *from, const shardgate_topology *to,
                                 char **moves, size_t *moves_len, shardgate_error *err);

/* Frees what shardgate_place, shardgate_plan and shardgate_moves returned. */
void shardgate_free(void *p);

#ifdef __cplusplus
}
#endif

#endif
