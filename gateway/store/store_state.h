/* What the store holds (docs/architecture.md §1): private to gateway/store/, for store.c and the
 * two stores' files; everyone else reaches it through store.h. */
#ifndef SHARDGATE_GW_STORE_STATE_H
#define SHARDGATE_GW_STORE_STATE_H

#include <pthread.h>
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
#include "store.h"

struct gw_store_ops;

struct gw_store {
    const struct gw_store_ops *ops; /* the store gw_store_open chose; NULL before */
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
    gw_pg_epoch_fn publish; /* gw_store_options' */
    void *publish_ctx;
    pthread_mutex_t *publish_lock;
};

#endif
