/* Epoch records of the journal (docs/journal.md §2): written in the new form, replayed in the
 * legacy and the new form under the chain rules, and the receipt's link to its epoch. Internal to
 * store/: journal.c replays with it; the record line is public in journal.h. */
#ifndef SHARDGATE_GW_JOURNAL_EPOCH_H
#define SHARDGATE_GW_JOURNAL_EPOCH_H

#include <jansson.h>

#include "chain.h"
#include "contract.h"
#include "membership.h"

/* Checks one epoch record line (`root` its JSON) against the chain so far and the receipts
 * before it (`last_seq`): the recomputed epoch id and ring id, epoch_seq, prev, first_seq, a
 * different epoch than the previous one, and the canonical bytes of the new form. On success
 * fills *entry (the chain's next link), *members (the caller frees it) and *contract (may be
 * NULL). Returns 0, -EINVAL
 * with err->msg saying what is wrong, or -ENOMEM. */
int gw_epoch_record_replay(json_t *root, const char *line, size_t len, struct gw_epoch_chain *chain,
                           uint64_t last_seq, struct gw_epoch_entry *entry,
                           struct gw_membership *members, struct gw_contract *contract,
                           struct gw_error *err);

/* A receipt's link to the chain: a version 2 receipt names an earlier epoch and carries its
 * ring id; a version 1 receipt carries the ring id of an earlier epoch. *epoch_seq: the latest
 * chain entry it names (its totals go there, docs/decisions.md §17). Returns 0 or -EINVAL. */
int gw_epoch_receipt_link(struct gw_epoch_chain *chain, json_t *receipt, uint64_t *epoch_seq,
                          struct gw_error *err);

#endif
