/* The assignment feed's reader with --store postgres (docs/api.md §17, docs/journal.md §10):
 * the same records in the same order as the journal's reader gives (feed.h), rebuilt from the
 * rows. A committed seq is never followed by an uncommitted smaller one: every commit holds the
 * sequencer row until it has committed, so a page read is a gap-free prefix. */
#include "pg_store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "records.h"

/* The journal's receipt record line of one row (docs/journal.md §2), once the row passed its
 * check (pg_receipt.c). */
static int receipt_line(PGresult *res, int row, struct gw_buf *line, struct gw_error *err)
{
    const char *batch_id = PQgetvalue(res, row, 3);
    const char *damage =
        gw_pg_receipt_damage(batch_id, PQgetvalue(res, row, 2), (size_t)PQgetlength(res, row, 2),
                             PQgetvalue(res, row, 4));
    if (damage)
        return gw_pg_receipt_refused(batch_id, damage, err);
    unsigned char fp[GW_FINGERPRINT_LEN];
    const char *hex = PQgetvalue(res, row, 1);
    if (strlen(hex) != 2 * GW_FINGERPRINT_LEN || gw_hex_decode(hex, fp, GW_FINGERPRINT_LEN) != 0)
        return -EINVAL;
    gw_buf_reset(line);
    gw_records_receipt_prefix(line, strtoull(PQgetvalue(res, row, 0), NULL, 10), fp);
    gw_buf_append(line, PQgetvalue(res, row, 2), (size_t)PQgetlength(res, row, 2));
    gw_buf_puts(line, "}");
    return line->failed ? -ENOMEM : 0;
}

/* The epoch rows whose first receipt is in (after, through]: they go just before it. */
static PGresult *epochs_between(struct gw_pg_store *s, uint64_t after, uint64_t through,
                                struct gw_error *err)
{
    char a[24], t[24];
    snprintf(a, sizeof(a), "%" PRIu64, after);
    snprintf(t, sizeof(t), "%" PRIu64, through);
    const char *params[] = {a, t};
    return gw_pg_exec(&s->query,
                      "SELECT record, first_seq FROM shardgate_epochs WHERE first_seq > $1 AND "
                      "first_seq <= $2 ORDER BY epoch_seq",
                      2, params, err);
}

static PGresult *receipts_after(struct gw_pg_store *s, uint64_t after, size_t max,
                                struct gw_error *err)
{
    char a[24], n[24];
    snprintf(a, sizeof(a), "%" PRIu64, after);
    snprintf(n, sizeof(n), "%zu", max);
    const char *params[] = {a, n};
    return gw_pg_exec(&s->query,
                      "SELECT seq, fingerprint, receipt, batch_id, encode(receipt_sha256, 'hex') "
                      "FROM shardgate_receipts WHERE seq > $1 ORDER BY seq LIMIT $2",
                      2, params, err);
}

/* Visits the rows in journal order: each epoch just before the receipt with its first_seq. */
static int visit_rows(PGresult *rec, PGresult *ep, gw_feed_visit_fn visit, void *ctx,
                      uint64_t *last, struct gw_error *err)
{
    struct gw_buf line;
    gw_buf_init(&line);
    int rc = 0, e = 0, epochs = ep ? PQntuples(ep) : 0;
    for (int row = 0; rc == 0 && row < PQntuples(rec); row++) {
        uint64_t seq = strtoull(PQgetvalue(rec, row, 0), NULL, 10);
        for (; rc == 0 && e < epochs && strtoull(PQgetvalue(ep, e, 1), NULL, 10) <= seq; e++) {
            struct gw_feed_record r = {GW_FEED_EPOCH, seq, PQgetvalue(ep, e, 0),
                                       (size_t)PQgetlength(ep, e, 0), NULL};
            rc = visit(ctx, &r);
        }
        if (rc == 0 && (rc = receipt_line(rec, row, &line, err)) == 0) {
            struct gw_feed_record r = {GW_FEED_RECEIPT, seq, line.data, line.len, NULL};
            rc = visit(ctx, &r);
            *last = seq;
        }
    }
    gw_buf_free(&line);
    return rc > 0 ? 0 : rc;
}

int gw_pg_feed_read(struct gw_pg_store *s, uint64_t after, size_t max, gw_feed_visit_fn visit,
                    void *ctx, uint64_t *last, struct gw_error *err)
{
    *last = after;
    pthread_mutex_lock(&s->read_lock);
    PGresult *rec = gw_pg_ensure(&s->query, err) == 0 ? receipts_after(s, after, max, err) : NULL;
    int n = rec ? PQntuples(rec) : 0;
    PGresult *ep =
        n ? epochs_between(s, after, strtoull(PQgetvalue(rec, n - 1, 0), NULL, 10), err) : NULL;
    pthread_mutex_unlock(&s->read_lock);
    int rc = !rec || (n && !ep) ? -EIO : visit_rows(rec, ep, visit, ctx, last, err);
    PQclear(rec);
    PQclear(ep);
    return rc;
}
