/* The store's face (docs/architecture.md §1): each call goes to the operations of the store
 * gw_store_open chose (file/store_file.c, pg/store_pg.c). */
#include "store.h"
#include "store_ops.h"
#include "store_state.h"

#include <errno.h>
#include <stdlib.h>

int gw_store_new(struct gw_store **out)
{
    struct gw_store *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    int rc = gw_ledger_init(&s->ledger);
    if (rc != 0) {
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

struct gw_ledger *gw_store_ledger(struct gw_store *s)
{
    return &s->ledger;
}

struct gw_feed_watch *gw_store_watch(struct gw_store *s)
{
    return &s->watch;
}

int gw_store_open(struct gw_store *s, const struct gw_store_options *o, struct gw_topology *topo,
                  struct gw_metrics *metrics, struct gw_error *err)
{
    if (o->url)
        return gw_store_open_pg(s, o, topo, metrics, err);
    s->ops = &gw_store_file_ops; /* before the open: a half-open state dir is closed by it */
    return gw_store_open_file(s, o, topo, err);
}

int gw_store_start(struct gw_store *s, const struct gw_store_options *o, struct gw_metrics *metrics,
                   struct gw_error *err)
{
    return s->ops->start(s, o, metrics, err);
}

void gw_store_stop(struct gw_store *s)
{
    if (s && s->ops)
        s->ops->stop(s);
}

void gw_store_close(struct gw_store *s)
{
    if (!s)
        return;
    if (s->ops)
        s->ops->close(s);
    gw_feed_watch_destroy(&s->watch);
    gw_ledger_free(&s->ledger);
    free(s);
}

int gw_store_writable(struct gw_store *s)
{
    return s->ops->writable(s);
}

const char *gw_store_check_name(const struct gw_store *s)
{
    return s->ops->check_name;
}

int gw_store_holds_membership(const struct gw_store *s)
{
    return s->ops && s->ops->holds_membership;
}

void gw_store_refusal(struct gw_store *s, struct gw_store_refusal *out)
{
    s->ops->refusal(s, out);
}

int gw_store_claim(struct gw_store *s, const char *id, size_t len, const unsigned char *fingerprint,
                   enum gw_commit_verdict *verdict, struct gw_buf *stored,
                   struct gw_store_miss *miss)
{
    return s->ops->claim(s, id, len, fingerprint, verdict, stored, miss);
}

void gw_store_release(struct gw_store *s, const char *id, size_t len)
{
    s->ops->release(s, id, len);
}

void gw_store_submit(struct gw_store *s, struct gw_commit_item *item)
{
    s->ops->submit(s, item);
}

int gw_store_read_receipt(struct gw_store *s, const char *id, size_t len, struct gw_buf *out,
                          struct gw_store_miss *miss)
{
    return s->ops->read_receipt(s, id, len, out, miss);
}

int gw_store_feed_read(struct gw_store *s, uint64_t after, size_t max, gw_feed_visit_fn visit,
                       void *ctx, struct gw_feed_mark *pos, uint64_t *last,
                       struct gw_store_miss *miss)
{
    return s->ops->feed_read(s, after, max, visit, ctx, pos, last, miss);
}

uint64_t gw_store_feed_head(struct gw_store *s)
{
    return s->ops->feed_head(s);
}

int gw_store_shard_totals(struct gw_store *s, const struct gw_membership *m,
                          struct gw_ledger_entry **out, size_t *count, struct gw_error *err)
{
    return s->ops->shard_totals(s, m, out, count, err);
}

int gw_store_member_totals(struct gw_store *s, const struct gw_membership *m, const size_t *slots,
                           struct gw_total *out, struct gw_error *err)
{
    return s->ops->member_totals(s, m, slots, out, err);
}

int gw_store_record_epoch(struct gw_store *s, const struct gw_topology *next,
                          enum gw_epoch_source source, const char *base,
                          struct gw_epoch_entry *entry, struct gw_error *err)
{
    return s->ops->record_epoch(s, next, source, base, entry, err);
}

int gw_store_catch_up(struct gw_store *s, gw_epoch_fn apply, void *ctx, struct gw_error *err)
{
    return s->ops->catch_up(s, apply, ctx, err);
}

struct gw_epoch_chain *gw_store_chain(struct gw_store *s)
{
    return s->ops->chain(s);
}

int gw_store_epoch_record(struct gw_store *s, const struct gw_epoch_entry *e, struct gw_buf *out,
                          struct gw_error *err)
{
    return s->ops->epoch_record(s, e, out, err);
}

const char *gw_store_damage_what(struct gw_store *s, int rc)
{
    return s->ops->damage_what(rc);
}

void gw_store_segment_file(struct gw_store *s, uint64_t segment, char *file)
{
    s->ops->segment_file(s, segment, file);
}
