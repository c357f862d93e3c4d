/* The store's face for reads (docs/architecture.md §1): a stored receipt from either store,
 * with the reason when there is none. */
#include "store.h"

#include <errno.h>

int gw_store_writable(struct gw_store *s)
{
    return s->pg ? gw_pg_store_available(&s->pg_store) : !gw_committer_failed(&s->committer);
}

struct gw_epoch_chain *gw_store_chain(struct gw_store *s)
{
    return s->pg ? &s->pg_store.chain : &s->journal.chain;
}

int gw_store_read_ref(struct gw_store *s, struct gw_idem_ref ref, struct gw_buf *out,
                      struct gw_store_miss *miss)
{
    miss->seq = ref.seq;
    miss->segment = ref.segment;
    miss->line = gw_journal_receipt_line(ref.seq, ref.offset);
    if (gw_segments_archived(&s->journal.segs, ref.segment))
        return -ESTALE;
    /* appends nothing on an error */
    return gw_journal_read_receipt(&s->journal, ref.segment, ref.seq, ref.offset, (size_t)ref.len,
                                   out);
}

static int read_pg(struct gw_store *s, const char *id, struct gw_buf *out,
                   struct gw_store_miss *miss)
{
    size_t had = out->len;
    int rc = gw_pg_store_find(&s->pg_store, id, out, &miss->error);
    if (rc != 0)
        out->len = had;
    return rc == -EIO ? -EAGAIN : rc;
}

int gw_store_read_receipt(struct gw_store *s, const char *id, size_t len, struct gw_buf *out,
                          struct gw_store_miss *miss)
{
    if (s->pg)
        return read_pg(s, id, out, miss);
    struct gw_idem_ref ref;
    int rc = gw_idem_find(&s->idem, id, len, &ref);
    if (rc == -EIO)
        return -EUCLEAN;
    return rc != 0 ? -ENOENT : gw_store_read_ref(s, ref, out, miss);
}
