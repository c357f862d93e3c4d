/* The three forms of a feed answer (docs/api.md §17): NDJSON, one JSON object, and server-sent
 * events. Internal to http/. */
#ifndef SHARDGATE_GW_FEED_RENDER_H
#define SHARDGATE_GW_FEED_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "feed_placements.h"
#include "feed_record.h"

enum gw_feed_form { GW_FEED_NDJSON, GW_FEED_JSON, GW_FEED_SSE };

/* A page: the body's bytes and, at most one per page, a long receipt's record sent from its
 * segment file at body offset whole_at (docs/api.md §17). */
struct gw_feed_out {
    enum gw_feed_form form;
    struct gw_buf body;
    size_t items;
    struct gw_feed_long whole; /* its own descriptor; fd -1: none */
    size_t whole_at;
};

/* Starts the body. */
void gw_feed_out_begin(struct gw_feed_out *o);
/* Frees the body and closes a long receipt's descriptor. */
void gw_feed_out_free(struct gw_feed_out *o);
/* The bytes the page sends: the body's and a long receipt's record. */
uint64_t gw_feed_out_size(const struct gw_feed_out *o);
/* One item (a JSON object). `type` names the SSE event; `id` (0: none) is its SSE id, set on
 * the last item of a receipt only, so an SSE client resumes at whole receipts. */
void gw_feed_out_item(struct gw_feed_out *o, const char *type, const char *json, size_t len,
                      uint64_t id);
/* A long receipt's item, its record left in its file (the descriptor dup'ed): the page's only one.
 * Returns 0, -EBUSY when the page has one already, or -errno. */
int gw_feed_out_long(struct gw_feed_out *o, const char *type, const struct gw_feed_long *l,
                     uint64_t id);
/* An assignment item from a placement of receipt `seq`, in the key order of docs/api.md §18,
 * without an SSE id. */
void gw_feed_out_assignment(struct gw_feed_out *o, uint64_t seq, const struct gw_feed_receipt *r,
                            const struct gw_feed_placement *p);
/* Gives the item just written SSE id `id` (the last assignment of a receipt). */
void gw_feed_out_last_id(struct gw_feed_out *o, uint64_t id);
/* Ends the body with the bookmark: the cursor to ask from next. */
void gw_feed_out_end(struct gw_feed_out *o, uint64_t last_seq);
/* The Content-Type of a form. */
const char *gw_feed_form_type(enum gw_feed_form form);

#endif
