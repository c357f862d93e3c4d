/* A receipt's assignments on one shard (docs/api.md §18), from its record line or, for a long
 * receipt, from its segment file read in pieces (never held whole). */
#include "feed_assignments.h"

#include <errno.h>
#include <string.h>

#define PIECE (1u << 20)

/* Emits the placements on `shard` from r->at on; 0 at the end of the placements, -EINVAL when the
 * bytes left at r->at do not hold a whole placement (cut, or malformed). */
static int walk(struct gw_feed_out *o, uint64_t seq, struct gw_feed_receipt *r, const char *shard,
                size_t shard_len, size_t *matched)
{
    struct gw_feed_placement p;
    int rc;
    while ((rc = gw_feed_receipt_next(r, &p)) == 1)
        if (p.shard.n == shard_len && memcmp(p.shard.p, shard, shard_len) == 0) {
            gw_feed_out_assignment(o, seq, r, &p);
            ++*matched;
        }
    return rc;
}

/* Copies the receipt's batch_id and epoch into ids, so they outlive the piece they were in. */
static int keep_ids(struct gw_feed_receipt *r, struct gw_buf *ids)
{
    gw_buf_append(ids, r->batch_id.p, r->batch_id.n);
    gw_buf_append(ids, r->epoch.p, r->epoch.n);
    if (ids->failed)
        return -ENOMEM;
    r->batch_id.p = ids->data;
    r->epoch.p = ids->data + r->batch_id.n;
    return 0;
}

/* The next piece of a long receipt appended to w. */
static int next_piece(const struct gw_feed_long *l, struct gw_buf *w, uint64_t *at,
                      unsigned long *crc)
{
    if (gw_buf_reserve(w, PIECE))
        return -ENOMEM;
    long n = gw_feed_long_read(l, *at, w->data + w->len, PIECE, crc);
    if (n < 0)
        return n == -EBADMSG ? -EIO : (int)n; /* changed since its check: nothing of it is sent */
    w->len += (size_t)n;
    *at += (uint64_t)n;
    return 0;
}

/* A long receipt: each piece's whole placements walked, the cut one carried into the next; the
 * bytes after the placements are read too, as the checksum covers the whole record. */
static int long_assignments(struct gw_feed_out *o, const struct gw_feed_record *rec,
                            const char *shard, size_t shard_len, size_t *matched)
{
    const struct gw_feed_long *l = rec->whole;
    uint64_t at = 0, len = gw_feed_long_len(l);
    unsigned long crc = gw_feed_long_crc_start();
    struct gw_buf w, ids;
    struct gw_feed_receipt r;
    int opened = 0, walked_all = 0, rc = 0;
    gw_buf_init(&w);
    gw_buf_init(&ids);
    while (rc == 0 && at < len) {
        if (walked_all)
            w.len = 0;
        if ((rc = next_piece(l, &w, &at, &crc)) != 0 || walked_all)
            continue;
        if (opened) {
            r.at = w.data; /* the carried bytes, then the new piece */
        } else if (gw_feed_receipt_open(w.data, w.len, &r) != 0) {
            rc = at < len ? 0 : -EINVAL; /* the batch_id and epoch come before the placements */
            continue;
        } else if ((rc = keep_ids(&r, &ids)) != 0) {
            continue;
        }
        opened = 1;
        r.end = w.data + w.len;
        int walked = walk(o, rec->seq, &r, shard, shard_len, matched);
        if (walked == 0) {
            walked_all = 1;
        } else if (at < len) { /* a placement cut by the piece's end */
            size_t used = (size_t)(r.at - w.data);
            memmove(w.data, r.at, w.len - used);
            w.len -= used;
        } else {
            rc = walked;
        }
    }
    gw_buf_free(&w);
    gw_buf_free(&ids);
    return rc == 0 && !walked_all ? -EINVAL : rc;
}

int gw_feed_out_assignments(struct gw_feed_out *o, const struct gw_feed_record *rec,
                            const char *shard, size_t shard_len)
{
    size_t matched = 0;
    int rc;
    if (rec->whole) {
        rc = long_assignments(o, rec, shard, shard_len, &matched);
    } else {
        struct gw_feed_receipt r;
        rc = gw_feed_receipt_open(rec->line, rec->len, &r) != 0
                 ? -EINVAL
                 : walk(o, rec->seq, &r, shard, shard_len, &matched);
    }
    if (rc == 0 && matched)
        gw_feed_out_last_id(o, rec->seq);
    return rc;
}
