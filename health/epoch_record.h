/* A journal epoch record (docs/journal.md §2), the new or the legacy form, decoded and checked. */
#ifndef HC_EPOCH_RECORD_H
#define HC_EPOCH_RECORD_H

#include <jansson.h>

#include "error.h"
#include "verify.h"

/* Decodes rec into ep (zeroed, or as calloc'd by the journal): the chain fields, the recorded
 * ring id, the contract and the membership, and makes ep usable (ring id and epoch id
 * recomputed). Key order is left to the byte comparison (canon.c). Returns 0; -EINVAL with
 * err->msg = "<key>: <what is wrong>" for a record that does not decode; or another negative
 * code (out of memory, a digest failure) with err filled. */
int hc_epoch_record_decode(const json_t *rec, long line, struct hc_epoch *ep, struct hc_err *err);

#endif
