/* The membership's fast path (docs/decisions.md §6): a shards document read with json_read's
 * flat nodes instead of a jansson tree, for documents that are valid as they stand. */
#ifndef SHARDGATE_GW_MEMBERSHIP_READ_H
#define SHARDGATE_GW_MEMBERSHIP_READ_H

#include <stddef.h>

#include "shard.h"

/* Reads `text` as {"shards": [...]} where every shard object is valid by itself (docs/contract.md
 * §2: id, state, capacity, optional weight, nothing else). Fills *shards (malloc'd, file order,
 * weight defaulted to 1; file_index and online_weight left 0) and *count. Returns 0, 1 when it
 * declines (invalid JSON or any fault: the strict jansson path gives the verdict and the
 * message), or -ENOMEM. It never accepts what the strict path refuses: rules that span shards
 * (capacity sum, duplicate ids) are checked after it by the same code as the strict path. */
int gw_membership_read_fast(const char *text, size_t len, struct gw_shard **shards, size_t *count);

#endif
