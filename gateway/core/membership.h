/* The membership (input/shards.json, docs/contract.md §2): which shards exist, their state,
 * capacity and weight. */
#ifndef SHARDGATE_GW_MEMBERSHIP_H
#define SHARDGATE_GW_MEMBERSHIP_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "buf.h"
#include "contract.h"
#include "error.h"
#include "shard.h"

struct gw_membership {
    struct gw_shard *shards; /* in id order */
    size_t count;
};

/* Parses membership JSON; `name` is the file name used in messages. Returns 0, or -EINVAL with
 * err->path the JSON path and err->msg "shards: <name>: <path>: <what>". Enforces rule R1 of
 * docs/contract.md (Membership): the running sum of capacity stays <= GW_SAFE_INT_MAX. A valid
 * document is read without a jansson tree (membership_read.c); any other goes through
 * gw_membership_parse_tree, so every message is the strict path's. */
int gw_membership_parse(const char *text, size_t len, const char *name, struct gw_membership *out,
                        struct gw_error *err);

/* gw_membership_parse through the jansson tree alone, never the fast path of membership_read.c
 * (docs/decisions.md §6): the strict path that gives every verdict the fast path declines, and
 * what tests compare the fast path with. Returns as gw_membership_parse. */
int gw_membership_parse_tree(const char *text, size_t len, const char *name,
                             struct gw_membership *out, struct gw_error *err);

/* Parses a `shards` array already read as JSON (an epoch record's), as gw_membership_parse. */
int gw_membership_from_json(json_t *list, const char *name, struct gw_membership *out,
                            struct gw_error *err);

/* Rule R2 of docs/contract.md (Membership), walking shards[] in file order: under ketama the
 * running sum of vnodes * weight over online shards stays <= GW_RING_POINTS_MAX, else -EINVAL
 * with err->msg "shards: <name>: shards[N].weight: ring exceeds 16777216 points"; under maglev
 * the running count of online shards stays <= DISPATCH_MAGLEV_TABLE, else "shards: <name>:
 * shards[N].state: more online shards than DISPATCH_MAGLEV_TABLE (M)". */
int gw_membership_check_ring(const struct gw_membership *m, const struct gw_contract *c,
                             const char *name, struct gw_error *err);

/* Reads and parses the file at `path`, as gw_membership_parse. */
int gw_membership_load(const char *path, struct gw_membership *out, struct gw_error *err);

/* Appends the shards as a JSON array in id order, each with id, state, capacity and weight: a
 * shards document's `shards`, read back to the same membership. */
void gw_membership_write(struct gw_buf *out, const struct gw_membership *m);

void gw_membership_free(struct gw_membership *m);

#endif
