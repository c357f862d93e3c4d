/* A journal record into the ledger, as a replay adds it (docs/journal.md §5, §7). */
#ifndef SHARDGATE_GW_LEDGER_REPLAY_H
#define SHARDGATE_GW_LEDGER_REPLAY_H

#include "error.h"
#include "journal.h"
#include "ledger.h"

/* An epoch record makes its shards known; a receipt adds its per-shard load and received under
 * rec->epoch_seq (the latest chain entry it names). Returns 0, -EINVAL (a receipt without a
 * valid shards object, err set) or -ENOMEM (err set). */
int gw_ledger_replay_record(struct gw_ledger *l, const struct gw_journal_record *rec,
                            struct gw_error *err);

#endif
