/* A receipt (docs/contract.md §5) decoded from JSON into plain fields, with its shape checked. */
#ifndef HC_RECEIPT_H
#define HC_RECEIPT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "error.h"

/* A string borrowed from the JSON document: may hold NUL bytes, so it carries its length. */
struct hc_str {
    const char *p;
    size_t n;
};

struct hc_rplacement {
    struct hc_str id, key, shard, reason;
    struct hc_str home; /* spill only (docs/contract.md §9); home.p == NULL when absent */
    int64_t size, hash, point, vnode; /* maglev, jump: point is the slot, hash and vnode 0 */
};

struct hc_rshard {
    struct hc_str id, state;
    int64_t weight, capacity, load, received;
    int over_capacity;
};

struct hc_receipt {
    int64_t version;
    struct hc_str batch_id;
    struct hc_str epoch; /* receipt_version 2 only; epoch.p is NULL in a version-1 receipt */
    struct hc_str ring_id, algorithm, hash;
    int64_t vnodes, vnodes_total; /* ketama */
    int64_t table;                /* maglev, jump: ring.table (docs/contract.md §11, §10) */
    int table_form; /* ring.algorithm is "maglev" or "jump": the keys of a table's form */
    struct hc_str *online;
    size_t n_online;
    struct hc_rplacement *pl;
    size_t n_pl;
    struct hc_rshard *sh;
    size_t n_sh;
    int64_t capacity;
    int64_t changes, dispatched, over_capacity_shards;
    int has_spilled; /* counts.spilled is present (spill only, docs/contract.md §9) */
    int64_t spilled;
    int ok;
};

/* Decodes root into r; strings stay owned by root, which must outlive r. Keys must be exactly
 * those of docs/contract.md §5 (docs/contract.md §11 when ring.algorithm is "maglev" or "jump"), in
 * its order, with the right JSON types: with "epoch" after batch_id when receipt_version is 2,
 * without it otherwise (version 1). Returns 0, or -EINVAL with err->msg = "<path>: <what is
 * wrong>", or -ENOMEM. */
int hc_receipt_decode(const json_t *root, struct hc_receipt *r, struct hc_err *err);
void hc_receipt_free(struct hc_receipt *r);

/* Borrowed view of a JSON string. */
struct hc_str hc_str_of(const json_t *s);
int hc_str_eq(struct hc_str a, const char *b);

#endif
