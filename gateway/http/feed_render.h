/* The three forms of a feed answer (docs/api.md §17): NDJSON, one JSON object, and server-sent
 * events. Internal to http/. */
#ifndef SHARDGATE_GW_FEED_RENDER_H
#define SHARDGATE_GW_FEED_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "feed_placements.h"

enum gw_feed_form { GW_FEED_NDJSON, GW_FEED_JSON, GW_FEED_SSE };

struct gw_feed_out {
    enum gw_feed_form form;
    struct gw_buf body;
    size_t items;
};

/* Starts the body. */
void gw_feed_out_begin(struct gw_feed_out *o);
/* One item (a JSON object). `type` names the SSE event; `id` (0: none) is its SSE id, set on
 * the last item of a receipt only, so an SSE client resumes at whole receipts. */
void gw_feed_out_item(struct gw_feed_out *o, const char *type, const char *json, size_t len,
                      uint64_t id);
/* An assignment item from a placement of receipt `seq`, in the key order of docs/api.md §18. */
void gw_feed_out_assignment(struct gw_feed_out *o, uint64_t seq, const struct gw_feed_receipt *r,
                            const struct gw_feed_placement *p, int last_of_receipt);
/* Ends the body with the bookmark: the cursor to ask from next. */
void gw_feed_out_end(struct gw_feed_out *o, uint64_t last_seq);
/* The Content-Type of a form. */
const char *gw_feed_form_type(enum gw_feed_form form);

#endif
