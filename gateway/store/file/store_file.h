/* What the state dir's store holds (docs/journal.md): its journal, writer, checkpointer, index,
 * feed reader and scrub. For store_file.c and store_file_open.c only; the rest of the gateway
 * reaches it through store.h. */
#ifndef SHARDGATE_GW_STORE_FILE_H
#define SHARDGATE_GW_STORE_FILE_H

#include <stdint.h>

#include "checkpointer.h"
#include "commit.h"
#include "feed.h"
#include "idempotency.h"
#include "journal.h"
#include "scrub.h"
#include "store_state.h"

struct gw_store_file {
    struct gw_journal journal;
    struct gw_committer committer;
    struct gw_checkpointer checkpointer; /* docs/journal.md §7 */
    uint64_t checkpoint_seq;             /* last_seq of the checkpoint the start used, 0: none */
    struct gw_idem idem;
    int idem_open;
    uint64_t index_durable_seq; /* the index files hold every id through this seq */
    struct gw_feed feed;        /* the assignment feed's reader (docs/api.md §17) */
    struct gw_scrub scrub;      /* re-reads the journal (docs/journal.md §2.1) */
};

/* The state dir's store of s (s->impl once gw_store_open_file made it). */
static inline struct gw_store_file *gw_fs(const struct gw_store *s)
{
    return s->impl;
}

#endif
