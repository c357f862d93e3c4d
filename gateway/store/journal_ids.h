/* Re-inserting the batch ids a checkpoint covers into the idempotency index (docs/journal.md
 * §7), fast: from the fixed prefix of each receipt record, no JSON tree. */
#ifndef SHARDGATE_GW_JOURNAL_IDS_H
#define SHARDGATE_GW_JOURNAL_IDS_H

#include "idempotency.h"
#include "journal.h"

/* Inserts the id of every receipt record with seq > after_seq that lies before (end_segment,
 * end_offset). Returns 0, -EINVAL (a record that does not read, or an id twice: err says
 * where), -ENOMEM, -errno. */
int gw_journal_scan_ids(struct gw_journal *j, struct gw_idem *idem, uint64_t after_seq,
                        uint64_t end_segment, uint64_t end_offset, struct gw_error *err);

#endif
