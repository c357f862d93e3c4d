/* Criteria for the epoch chain of a journal (docs/contract.md §7, docs/journal.md §2). */
#ifndef HC_CHAIN_H
#define HC_CHAIN_H

#include "verify.h"

/* epoch_id: the record's epoch is the id recomputed from its own contract + shards. */
void hc_c_epoch_id(struct hc_run *run);
/* epoch_seq: 1 for the first epoch record, the previous one's + 1 after. */
void hc_c_epoch_seq(struct hc_run *run);
/* epoch_prev: prev is the previous epoch record's epoch, null for the first. */
void hc_c_epoch_prev(struct hc_run *run);
/* epoch_changed: two consecutive epoch records never have the same epoch. */
void hc_c_epoch_changed(struct hc_run *run);
/* epoch_first_seq: first_seq is 1 + the seq of the last receipt record before the record. */
void hc_c_epoch_first_seq(struct hc_run *run);

#endif
