/* Writes feed items in NDJSON, JSON or SSE form (docs/api.md §17). */
#include "feed_render.h"

#include <errno.h>
#include <string.h>

void gw_feed_out_begin(struct gw_feed_out *o)
{
    gw_buf_init(&o->body);
    o->items = 0;
    gw_feed_long_none(&o->whole);
    o->whole_at = 0;
    if (o->form == GW_FEED_JSON)
        gw_buf_puts(&o->body, "{\"items\":[");
}

void gw_feed_out_free(struct gw_feed_out *o)
{
    gw_buf_free(&o->body);
    gw_feed_long_release(&o->whole);
}

uint64_t gw_feed_out_size(const struct gw_feed_out *o)
{
    return o->body.len + (gw_feed_long_held(&o->whole) ? gw_feed_long_len(&o->whole) : 0);
}

/* Opens an item: the separator of the form. */
static void item_open(struct gw_feed_out *o, const char *type)
{
    if (o->form == GW_FEED_JSON && o->items)
        gw_buf_puts(&o->body, ",");
    if (o->form == GW_FEED_SSE) {
        gw_buf_puts(&o->body, "event: ");
        gw_buf_puts(&o->body, type);
        gw_buf_puts(&o->body, "\ndata: ");
    }
    o->items++;
}

static void item_close(struct gw_feed_out *o, uint64_t id)
{
    if (o->form == GW_FEED_NDJSON)
        gw_buf_puts(&o->body, "\n");
    if (o->form != GW_FEED_SSE)
        return;
    gw_buf_puts(&o->body, "\n");
    if (id)
        gw_buf_field_u64(&o->body, "id: ", id);
    gw_buf_puts(&o->body, id ? "\n\n" : "\n");
}

void gw_feed_out_item(struct gw_feed_out *o, const char *type, const char *json, size_t len,
                      uint64_t id)
{
    item_open(o, type);
    gw_buf_append(&o->body, json, len);
    item_close(o, id);
}

int gw_feed_out_long(struct gw_feed_out *o, const char *type, const struct gw_feed_long *l,
                     uint64_t id)
{
    if (gw_feed_long_held(&o->whole))
        return -EBUSY;
    int rc = gw_feed_long_keep(&o->whole, l);
    if (rc != 0)
        return rc;
    item_open(o, type);
    o->whole_at = o->body.len;
    item_close(o, id);
    return 0;
}

static void span(struct gw_buf *b, const char *key, const struct gw_feed_span *s)
{
    gw_buf_puts(b, key);
    if (s->n)
        gw_buf_append(b, s->p, s->n);
    else
        gw_buf_puts(b, "null");
}

void gw_feed_out_assignment(struct gw_feed_out *o, uint64_t seq, const struct gw_feed_receipt *r,
                            const struct gw_feed_placement *p)
{
    item_open(o, "assignment");
    gw_buf_field_u64(&o->body, "{\"type\":\"assignment\",\"seq\":", seq);
    span(&o->body, ",\"batch_id\":", &r->batch_id);
    span(&o->body, ",\"epoch\":", &r->epoch);
    span(&o->body, ",\"id\":", &p->id);
    span(&o->body, ",\"key\":", &p->key);
    gw_buf_field_u64(&o->body, ",\"size\":", p->size);
    gw_buf_puts(&o->body, "}");
    item_close(o, 0);
}

void gw_feed_out_last_id(struct gw_feed_out *o, uint64_t id)
{
    if (o->form != GW_FEED_SSE || !o->items || o->body.failed)
        return;
    o->body.len--; /* the blank line that ends an event without an id */
    gw_buf_field_u64(&o->body, "id: ", id);
    gw_buf_puts(&o->body, "\n\n");
}

void gw_feed_out_end(struct gw_feed_out *o, uint64_t last_seq)
{
    switch (o->form) {
    case GW_FEED_JSON:
        gw_buf_field_u64(&o->body, "],\"last_seq\":", last_seq);
        gw_buf_puts(&o->body, "}\n");
        break;
    case GW_FEED_NDJSON:
        gw_buf_field_u64(&o->body, "{\"type\":\"bookmark\",\"last_seq\":", last_seq);
        gw_buf_puts(&o->body, "}\n");
        break;
    case GW_FEED_SSE:
        gw_buf_field_u64(&o->body,
                         "event: bookmark\ndata: {\"type\":\"bookmark\",\"last_seq\":", last_seq);
        gw_buf_field_u64(&o->body, "}\nid: ", last_seq);
        gw_buf_puts(&o->body, "\n\n");
        break;
    }
}

const char *gw_feed_form_type(enum gw_feed_form form)
{
    if (form == GW_FEED_JSON)
        return "application/json";
    return form == GW_FEED_SSE ? "text/event-stream" : "application/x-ndjson";
}
