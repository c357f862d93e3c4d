/* The store of `shardgate serve` (docs/architecture.md §1): the state dir's journal, index,
 * checkpoints, scrub and feed reader, or with --store postgres the PostgreSQL store; the totals
 * and the feed's waiting requests either way. One struct for both, chosen at start by `pg`.
 * Its calls are the face the HTTP layer reads through (gw_store_*). */
#ifndef SHARDGATE_GW_STORE_H
#define SHARDGATE_GW_STORE_H

#include <stdint.h>

#include "checkpointer.h"
#include "commit.h"
#include "feed.h"
#include "feed_watch.h"
#include "idempotency.h"
#include "journal.h"
#include "ledger.h"
#include "pg_store.h"
#include "scrub.h"

struct gw_store {
    int pg; /* 1 with --store postgres: pg_store replaces journal and index */
    struct gw_journal journal;
    struct gw_committer committer;
    struct gw_checkpointer checkpointer; /* docs/journal.md §7 */
    uint64_t checkpoint_seq;             /* last_seq of the checkpoint the start used, 0: none */
    struct gw_idem idem;
    int idem_open;
    uint64_t index_durable_seq; /* the index files hold every id through this seq */
    struct gw_ledger ledger;
    struct gw_feed feed;        /* the assignment feed's reader (docs/api.md §17) */
    struct gw_scrub scrub;      /* re-reads the journal (docs/journal.md §2.1) */
    struct gw_feed_watch watch; /* the feed's waiting requests, woken by the journal writer */
    struct gw_pg_store pg_store;
};

#endif
