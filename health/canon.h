/* The exact bytes the gateway writes for a journal line (docs/decisions.md). */
/* Rebuilt from the decoded values and compared with the line as read. */
#ifndef HC_CANON_H
#define HC_CANON_H

#include <stddef.h>

#include "verify.h"

/* Offset of the first byte where the receipt record's line differs from the canonical form
 * rebuilt from rec (seq, fingerprint) and r, or -1 when it is the canonical form. */
long hc_canon_receipt_record(const struct hc_record *rec, const struct hc_receipt *r);

/* The same for an epoch record: ring_id as recorded, ep's contract and id-sorted membership. */
long hc_canon_epoch_record(const struct hc_epoch *ep, struct hc_str line);

#endif
