/* A feed page holding a long receipt, sent as the socket takes it (docs/api.md §17). Internal to
 * http/. */
#ifndef SHARDGATE_GW_FEED_STREAM_H
#define SHARDGATE_GW_FEED_STREAM_H

#include <microhttpd.h>

#include "feed_cache.h"

struct gw_server;

/* The page's bytes as a response that reads its long receipt from the segment file in blocks,
 * checking them again as it goes: bytes that are no longer those checked cut the answer short
 * (the connection closes before Content-Length is reached), counted and logged as
 * record_checksum_failed. The response takes the caller's reference to the page; NULL on no
 * memory (the reference then dropped). */
struct MHD_Response *gw_feed_stream_response(struct gw_server *s, struct gw_feed_body *page);

#endif
