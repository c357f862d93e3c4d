/* The contract (docs/contract.md §1) as the health service reads it, with its own parser. */
#ifndef HC_CONTRACT_H
#define HC_CONTRACT_H

#include <jansson.h>

#include "error.h"

enum hc_hash { HC_HASH_SHA1, HC_HASH_MD5 };
enum hc_policy { HC_POLICY_REPORT, HC_POLICY_REJECT, HC_POLICY_SPILL };

enum hc_ring_kind { HC_RING_KETAMA, HC_RING_MAGLEV, HC_RING_JUMP };

#define HC_VNODES_MAX 4096
#define HC_TABLE_MAX 16777213u      /* the largest prime below 2^24 */
#define HC_JUMP_SLOTS_MAX 16777216u /* DISPATCH_JUMP_SLOTS: 2^24 */
#define HC_JUMP_VNODES                                                                             \
    160u /* the points a unit of weight of the ring a jump table is drawn from                     \
          */

struct hc_contract {
    enum hc_ring_kind ring; /* DISPATCH_HASH_RING */
    enum hc_hash hash;      /* DISPATCH_RING_HASH */
    unsigned vnodes;        /* DISPATCH_VNODES, 1..4096 (ketama; else 0) */
    unsigned table;         /* DISPATCH_MAGLEV_TABLE, a prime 2..16777213 (maglev), or
                               DISPATCH_JUMP_SLOTS, 1..2^24 (jump); else 0 */
    enum hc_policy policy;  /* DISPATCH_CAPACITY_POLICY */
};

/* Reads a contract file. Every key is required and there are no defaults. Returns 0, or a
 * negative errno-style code with err->msg = "<file>:<line>: <what is wrong>" (line 0 when the
 * file cannot be read, the last line when a key is missing). */
int hc_contract_load(const char *path, struct hc_contract *c, struct hc_err *err);

/* The key that sizes the contract's ring and its value: DISPATCH_VNODES, DISPATCH_MAGLEV_TABLE
 * under maglev, DISPATCH_JUMP_SLOTS under jump (docs/contract.md §1). */
const char *hc_size_key(const struct hc_contract *c);
unsigned hc_size(const struct hc_contract *c);

/* Reads the "contract" object of a journal epoch record under the same rules (all four keys,
 * the sizing key as a JSON integer). Returns 0 or -EINVAL with err->msg
 * naming the key. */
int hc_contract_from_json(const json_t *obj, struct hc_contract *c, struct hc_err *err);

/* The contract spellings: "ketama"/"maglev"/"jump", "sha1"/"md5", "report"/"reject"/"spill". */
const char *hc_ring_name(enum hc_ring_kind k);
const char *hc_hash_name(enum hc_hash h);
const char *hc_policy_name(enum hc_policy p);

#endif
