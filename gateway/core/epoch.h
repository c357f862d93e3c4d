/* The epoch id (docs/contract.md §7): one name for a contract and a whole membership. */
#ifndef SHARDGATE_GW_EPOCH_H
#define SHARDGATE_GW_EPOCH_H

#include "buf.h"
#include "contract.h"
#include "error.h"
#include "membership.h"

#define GW_EPOCH_HEX_LEN 40

/* Appends the bytes the epoch id hashes (docs/contract.md §7) to `out`. */
void gw_epoch_text(struct gw_buf *out, const struct gw_contract *c, const struct gw_membership *m);

/* Writes the epoch id, 40 lowercase hex digits and a NUL, to `hex`. Returns 0, or -ENOMEM with a
 * message in err. */
int gw_epoch_id(const struct gw_contract *c, const struct gw_membership *m,
                char hex[GW_EPOCH_HEX_LEN + 1], struct gw_error *err);

/* Writes the ring id (docs/contract.md §3) of the online shards of `m` under `c` to `hex`, the
 * way ring_build names its ring, without building it (journal replay checks a recorded ring id
 * this way). Returns 0, or -ENOMEM with a message in err. */
int gw_epoch_ring_id(const struct gw_contract *c, const struct gw_membership *m,
                     char hex[GW_EPOCH_HEX_LEN + 1], struct gw_error *err);

#endif
