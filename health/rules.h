/* Criteria for the rules the gateway enforces on what it accepts and writes. */
/* The batch rules (docs/contract.md, section 4) and the record bytes (docs/decisions.md). */
#ifndef HC_RULES_H
#define HC_RULES_H

#include "verify.h"

/* batch_id: 1..128 bytes of [A-Za-z0-9._:-]. */
void hc_c_batch_id(struct hc_run *run);
/* changes: 1..max_changes placements, ids 1..128 bytes, keys 1..1024 bytes, total size
 * <= 2^53-1. */
void hc_c_changes(struct hc_run *run);
/* record_bytes: the journal line is byte for byte what the gateway writes for its values. */
void hc_c_record_bytes(struct hc_run *run);

#endif
