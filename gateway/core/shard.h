/* One shard of the membership (docs/contract.md §2) and the limits on its fields. */
#ifndef SHARDGATE_GW_SHARD_H
#define SHARDGATE_GW_SHARD_H

#include <stddef.h>
#include <stdint.h>

#define GW_SHARD_ID_MAX 64
#define GW_SAFE_INT_MAX 9007199254740991ULL /* 2^53 - 1 */
#define GW_RING_POINTS_MAX 16777216ULL      /* 2^24: rule R2 of docs/contract.md */

enum gw_shard_state { GW_STATE_ONLINE, GW_STATE_DRAINING, GW_STATE_OFFLINE };

struct gw_shard {
    char id[GW_SHARD_ID_MAX + 1];
    size_t id_len;
    enum gw_shard_state state;
    uint64_t capacity;
    uint32_t weight;
    size_t file_index;      /* its place in the file's shards[] */
    uint64_t online_weight; /* sum of weight over online shards up to it, in file order */
};

/* "online", "draining" or "offline". */
const char *gw_state_name(enum gw_shard_state state);

/* The state named by the `len` bytes at `s` into *out: 0, or -1 when none has that name. */
int gw_state_parse(const char *s, size_t len, enum gw_shard_state *out);

/* 1 when `s` is 1..max bytes of [A-Za-z0-9._:-] (shard ids, batch ids), else 0. */
int gw_name_valid(const char *s, size_t len, size_t max);

#endif
