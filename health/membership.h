/* The membership (docs/contract.md §2) as the health service reads it, with its own validator. */
#ifndef HC_MEMBERSHIP_H
#define HC_MEMBERSHIP_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "contract.h"
#include "error.h"

#define HC_SHARD_ID_MAX 64
#define HC_WEIGHT_MAX 1000
#define HC_SAFE_INT_MAX 9007199254740991LL /* 2^53-1 */
#define HC_RING_POINTS_MAX 16777216ULL     /* 2^24: rule R2 of docs/contract.md */

enum hc_state { HC_STATE_ONLINE, HC_STATE_DRAINING, HC_STATE_OFFLINE };

struct hc_shard {
    char id[HC_SHARD_ID_MAX + 1];
    size_t id_len;
    enum hc_state state;
    int64_t capacity;
    unsigned weight;
};

/* Shards sorted by id (bytewise, shorter first), so index order is id order. */
struct hc_membership {
    struct hc_shard *shards;
    size_t n;
};

/* Reads a shards file: an object with exactly the key "shards" holding an array. Returns 0, or
 * a negative errno-style code with err->msg = "<file>: <path>: <what is wrong>". `c` is the
 * contract, for rule R2. */
int hc_membership_load(const char *path, const struct hc_contract *c, struct hc_membership *m,
                       struct hc_err *err);

/* Validates a JSON array of shard objects, with rules R1 and R2 (docs/contract.md, section 2)
 * for the contract `c`; paths in messages are "<prefix>[i].<field>".
 * Returns 0, or -EINVAL / -ENOMEM with err->msg = "<path>: <what is wrong>". */
int hc_membership_from_json(const json_t *arr, const char *prefix, const struct hc_contract *c,
                            struct hc_membership *m, struct hc_err *err);

void hc_membership_free(struct hc_membership *m);

/* Index of the shard with this id, or -1. */
long hc_membership_find(const struct hc_membership *m, const char *id, size_t len);

/* Orders ids bytewise as memcmp, a proper prefix first. */
int hc_id_cmp(const char *a, size_t alen, const char *b, size_t blen);

const char *hc_state_name(enum hc_state s);

#endif
