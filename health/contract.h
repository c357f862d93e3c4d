/* The contract (docs/contract.md §1) as the health service reads it, with its own parser. */
#ifndef HC_CONTRACT_H
#define HC_CONTRACT_H

#include <jansson.h>

#include "error.h"

enum hc_hash { HC_HASH_SHA1, HC_HASH_MD5 };
enum hc_policy { HC_POLICY_REPORT, HC_POLICY_REJECT, HC_POLICY_SPILL };

#define HC_VNODES_MAX 4096

struct hc_contract {
    enum hc_hash hash;     /* DISPATCH_RING_HASH */
    unsigned vnodes;       /* DISPATCH_VNODES, 1..4096 */
    enum hc_policy policy; /* DISPATCH_CAPACITY_POLICY; DISPATCH_HASH_RING is always ketama */
};

/* Reads a contract file. Every key is required and there are no defaults. Returns 0, or a
 * negative errno-style code with err->msg = "<file>:<line>: <what is wrong>" (line 0 when the
 * file cannot be read, the last line when a key is missing). */
int hc_contract_load(const char *path, struct hc_contract *c, struct hc_err *err);

/* Reads the "contract" object of a journal epoch record under the same rules (all four keys,
 * DISPATCH_VNODES as a JSON integer). Returns 0 or -EINVAL with err->msg naming the key. */
int hc_contract_from_json(const json_t *obj, struct hc_contract *c, struct hc_err *err);

/* The contract spellings: "sha1"/"md5", "report"/"reject"/"spill". */
const char *hc_hash_name(enum hc_hash h);
const char *hc_policy_name(enum hc_policy p);

#endif
