/* The epoch id (docs/contract.md §7): one SHA-1 over the contract and the whole membership. */
#ifndef HC_EPOCH_ID_H
#define HC_EPOCH_ID_H

#include "contract.h"
#include "error.h"
#include "membership.h"

/* Writes the 40 lowercase hex digits of the epoch id of c + m (every shard, every state) and a
 * NUL into id. Returns 0, or a negative code with err filled (the digest failed). */
int hc_epoch_id(const struct hc_contract *c, const struct hc_membership *m, char id[41],
                struct hc_err *err);

#endif
