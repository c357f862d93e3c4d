/* The contract (conf/dispatch.env, docs/contract.md §1): strict KEY=VALUE, every key required. */
#ifndef SHARDGATE_GW_CONTRACT_H
#define SHARDGATE_GW_CONTRACT_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "ring.h"

enum gw_policy { GW_POLICY_REPORT, GW_POLICY_REJECT, GW_POLICY_SPILL };

struct gw_contract {
    enum ring_algorithm algorithm;
    enum ring_digest digest;
    uint32_t vnodes; /* ketama: DISPATCH_VNODES; maglev, jump: 0 */
    uint32_t table;  /* maglev: DISPATCH_MAGLEV_TABLE; jump: DISPATCH_JUMP_SLOTS; ketama: 0 */
    enum gw_policy policy;
};

/* Parses contract text; `name` is the file name used in messages. Returns 0, or -EINVAL with
 * err->msg "contract: <name>:<line>: <what is wrong>". There are no defaults. */
int gw_contract_parse(const char *text, size_t len, const char *name, struct gw_contract *out,
                      struct gw_error *err);

/* Reads and parses the file at `path`. Returns 0, or -EINVAL / -errno with err->msg as above. */
int gw_contract_load(const char *path, struct gw_contract *out, struct gw_error *err);

const char *gw_policy_name(enum gw_policy policy);

/* The key that sizes the ring of this contract's algorithm, "DISPATCH_VNODES",
 * "DISPATCH_MAGLEV_TABLE" or "DISPATCH_JUMP_SLOTS", and its value (docs/contract.md §1). */
const char *gw_contract_size_key(const struct gw_contract *c);
uint32_t gw_contract_size(const struct gw_contract *c);

/* 1 when a batch that leaves a shard over capacity is refused whole (reject; spill, where it
 * means no online shard had room: docs/contract.md §9), 0 when it is accepted (report). */
int gw_policy_refuses_over_capacity(enum gw_policy policy);

#endif
