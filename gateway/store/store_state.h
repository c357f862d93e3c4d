/* What the store holds (docs/architecture.md §1): private to gateway/store/, for store.c and the
 * two stores' files; everyone else reaches it through store.h. */
#ifndef SHARDGATE_GW_STORE_STATE_H
#define SHARDGATE_GW_STORE_STATE_H

#include "feed_watch.h"
#include "ledger.h"
#include "store.h"

struct gw_store_ops;

struct gw_store {
    const struct gw_store_ops *ops; /* the store gw_store_open chose; NULL before */
    struct gw_ledger ledger;        /* both stores' totals (docs/api.md §7) */
    struct gw_feed_watch watch;     /* the feed's waiting requests, woken by the store's writer */
    /* What the chosen store holds of its own, made by its open: struct gw_store_file
     * (file/store_file.h) or the database's (pg/store_pg.c); NULL before. */
    void *impl;
};

#endif
