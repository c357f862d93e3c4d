/* The facts only a --store database has, beside the journal it is rebuilt into. */
#ifndef HC_STORE_FACTS_H
#define HC_STORE_FACTS_H

#include "error.h"
#include "report.h"
#include "store_read.h"

/* docs/operations.md §1.7: rows left out of the rebuilt journal (a newline in a record or
 * receipt), seqs 1..N without gaps, shardgate_sequencer.last_seq = N, and each receipt row's
 * batch_id and epoch columns = the receipt's. Issues and evaluations go into rep. */
void hc_store_facts(const struct hc_store_snap *s, struct hc_report *rep);

/* shardgate_totals = the sums over the receipts' placements per (epoch, shard): received the
 * count, load the sum of sizes (docs/operations.md §1.7). Returns 0 or -ENOMEM with err. */
int hc_store_totals(const struct hc_store_snap *s, struct hc_report *rep, struct hc_err *err);

/* Counts n evaluations of the store facts. */
void hc_store_count(struct hc_report *rep, uint64_t n);

#endif
