/* A receipt's assignments on one shard as feed items (docs/api.md §18). Internal to http/. */
#ifndef SHARDGATE_GW_FEED_ASSIGNMENTS_H
#define SHARDGATE_GW_FEED_ASSIGNMENTS_H

#include <stddef.h>

#include "feed_record.h"
#include "feed_render.h"

/* Appends to o an assignment item for each placement of receipt `rec` on `shard` (a JSON string,
 * quotes included), in the receipt's order; the last carries the receipt's SSE id. A long
 * receipt is read from its file in pieces. Returns 0; -EINVAL when the record is not a
 * receipt's; -EIO when a long receipt's bytes are no longer the ones checked; or -errno. */
int gw_feed_out_assignments(struct gw_feed_out *o, const struct gw_feed_record *rec,
                            const char *shard, size_t shard_len);

#endif
