/* What a feed read visits, from either store (docs/api.md §17): the file journal's reader
 * (feed.h) and the PostgreSQL store's (pg/pg_store.h) hand the same records to the same
 * visitor. */
#ifndef SHARDGATE_GW_FEED_RECORD_H
#define SHARDGATE_GW_FEED_RECORD_H

#include <stddef.h>
#include <stdint.h>

enum gw_feed_kind { GW_FEED_RECEIPT, GW_FEED_EPOCH };

/* A record met by gw_feed_read, borrowed for the visit only. `seq` is a receipt's seq, or the
 * seq of the receipt an epoch record comes just before (its first_seq). */
struct gw_feed_record {
    enum gw_feed_kind kind;
    uint64_t seq;
    const char *line; /* the record line, without its newline */
    size_t len;
};

/* Returns 0 to go on, 1 to stop after this record (a receipt), or a negative code. */
typedef int (*gw_feed_visit_fn)(void *ctx, const struct gw_feed_record *rec);

#endif
