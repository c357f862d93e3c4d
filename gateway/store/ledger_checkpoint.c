/* The ledger as a checkpoint holds it (docs/journal.md §7): every shard ever seen with its
 * cumulative totals, then the totals of every epoch with a receipt, taken under one lock so that
 * both agree. */
#include "ledger.h"

#include <errno.h>

static void write_ledger(struct gw_ledger *l, struct gw_buf *out)
{
    gw_buf_puts(out, "\"ledger\":[");
    for (size_t i = 0; i < l->count; i++) {
        const struct gw_ledger_entry *e = &l->entries[l->by_id[i]];
        gw_buf_puts(out, i ? ",{\"id\":" : "{\"id\":");
        gw_buf_json_string(out, e->id, e->id_len);
        gw_buf_field_u64(out, ",\"weight\":", e->weight);
        gw_buf_field_u64(out, ",\"capacity\":", e->capacity);
        gw_buf_field_u128(out, ",\"load\":", e->total.load);
        gw_buf_field_u128(out, ",\"received\":", e->total.received);
        gw_buf_puts(out, "}");
    }
    gw_buf_puts(out, "]");
}

/* One epoch's shards with a non-zero received, in id order. */
static void write_epoch(struct gw_ledger *l, const struct gw_ledger_epoch *ep, struct gw_buf *out)
{
    gw_buf_field_u64(out, "{\"epoch_seq\":", ep->epoch_seq);
    gw_buf_puts(out, ",\"shards\":[");
    int first = 1;
    for (size_t i = 0; i < l->count; i++) {
        size_t slot = l->by_id[i];
        if (slot >= ep->slots || ep->by_slot[slot].received == 0)
            continue;
        const struct gw_ledger_entry *e = &l->entries[slot];
        gw_buf_puts(out, first ? "{\"id\":" : ",{\"id\":");
        gw_buf_json_string(out, e->id, e->id_len);
        gw_buf_field_u128(out, ",\"load\":", ep->by_slot[slot].load);
        gw_buf_field_u128(out, ",\"received\":", ep->by_slot[slot].received);
        gw_buf_puts(out, "}");
        first = 0;
    }
    gw_buf_puts(out, "]}");
}

int gw_ledger_write_checkpoint(struct gw_ledger *l, struct gw_buf *out)
{
    pthread_mutex_lock(&l->lock);
    if (l->epochs_incomplete) {
        pthread_mutex_unlock(&l->lock);
        return -ENOMEM;
    }
    write_ledger(l, out);
    gw_buf_puts(out, ",\"totals\":[");
    int first = 1;
    for (size_t i = 0; i < l->epoch_count; i++) {
        const struct gw_ledger_epoch *ep = &l->epochs[i];
        int any = 0;
        for (size_t s = 0; s < ep->slots && !any; s++)
            any = ep->by_slot[s].received != 0;
        if (!any)
            continue;
        if (!first)
            gw_buf_puts(out, ",");
        write_epoch(l, ep, out);
        first = 0;
    }
    gw_buf_puts(out, "]");
    pthread_mutex_unlock(&l->lock);
    return 0;
}
