/* JSON rendering of ring facts: the receipt (docs/contract.md §5), the ring summary and lookups. */
#ifndef SHARDGATE_GW_RECEIPT_H
#define SHARDGATE_GW_RECEIPT_H

#include "batch.h"
#include "buf.h"
#include "dispatch.h"
#include "ring.h"
#include "topology.h"

/* Appends the receipt of a dispatched batch, compact, keys in docs/contract.md §5 order, no
 * newline. Version 2: the epoch id follows batch_id (docs/contract.md §5). */
void gw_receipt_write(struct gw_buf *out, const struct gw_topology *t, const struct gw_batch *b,
                      const struct gw_dispatch *d);

/* Whether the stored receipt bytes (`len`, no newline) name batch `id` (`id_len` bytes): both
 * receipt versions write batch_id second, after receipt_version (docs/contract.md §5). A read
 * checks it, so that it never serves another batch's receipt (docs/journal.md §9, §10). */
int gw_receipt_names_batch(const char *receipt, size_t len, const char *id, size_t id_len);

/* Appends the ring summary {"id",...,"online":[...]}; with `points`, also every point (maglev:
 * "slots", the shard of every slot). */
void gw_ring_write(struct gw_buf *out, const struct gw_topology *t, int points);

/* Appends {"key":...,"hash":...,"point":...,"vnode":...,"shard":...,"reason":...}; maglev:
 * {"key":...,"slot":...,"shard":...,"reason":"table"}. */
void gw_lookup_write(struct gw_buf *out, const struct gw_topology *t, const char *key,
                     size_t key_len, const struct ring_placement *p);

#endif
