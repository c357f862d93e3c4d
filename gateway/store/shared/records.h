/* The record lines both stores write and read (docs/journal.md §2): the epoch record, written in
 * the new form and replayed in the legacy and the new form under the chain rules; a receipt's
 * link to its epoch; the bytes a receipt record starts with. The journal's segments and the
 * PostgreSQL store's rows hold the same lines. */
#ifndef SHARDGATE_GW_RECORDS_H
#define SHARDGATE_GW_RECORDS_H

#include <jansson.h>
#include <stdint.h>

#include "batch.h"
#include "buf.h"
#include "chain.h"
#include "contract.h"
#include "membership.h"

/* Appends the epoch record line (docs/journal.md §2) of a contract, a membership and the chain
 * entry `e`, without a newline. */
void gw_records_epoch_line(struct gw_buf *out, const struct gw_contract *c,
                           const struct gw_membership *m, const struct gw_epoch_entry *e);

/* Appends the bytes a receipt record starts with, up to and including `"receipt":`. The record
 * is this prefix, the receipt bytes and "}\n". */
void gw_records_receipt_prefix(struct gw_buf *out, uint64_t seq,
                               const unsigned char fingerprint[GW_FINGERPRINT_LEN]);

/* Reads an epoch record's contract and membership (`root` its JSON) under the rules of a start
 * (docs/contract.md §1, §2, R1 and R2) and recomputes its epoch id and ring id into e->epoch
 * and e->ring_id, without checking it against a chain. Returns 0 with *m to be freed by the
 * caller, -EINVAL with err->msg saying what is wrong, or -ENOMEM. */
int gw_epoch_record_read(json_t *root, struct gw_contract *c, struct gw_membership *m,
                         struct gw_epoch_entry *e, struct gw_error *err);

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
 * chain entry it names (its totals go there, docs/decisions.md §11). Returns 0 or -EINVAL. */
int gw_epoch_receipt_link(struct gw_epoch_chain *chain, json_t *receipt, uint64_t *epoch_seq,
                          struct gw_error *err);

#endif
