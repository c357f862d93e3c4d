/* Reading a --store database: the schema check and the four tables, in one snapshot. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_read.h"

int64_t hc_store_int(const PGresult *res, int row, int col)
{
    return strtoll(PQgetvalue(res, row, col), NULL, 10);
}

/* shardgate_schema must exist and say a version HC_STORE_SCHEMA_MIN..HC_STORE_SCHEMA
 * (docs/operations.md §1.7). */
static int hc_store_schema(struct hc_pg *c, long *out, struct hc_err *err)
{
    int code = 0;
    PGresult *res =
        hc_pg_select(c, "SELECT to_regclass('shardgate_schema') IS NOT NULL", &code, err);
    if (res == NULL)
        return code;
    int exists = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    PQclear(res);
    if (!exists)
        return hc_err_set(err, -ENOENT,
                          "no shardgate_schema table: not a shardgate database (shardgate db init "
                          "creates it)");
    res = hc_pg_select(c, "SELECT coalesce(max(version), 0) FROM shardgate_schema", &code, err);
    if (res == NULL)
        return code;
    long version = strtol(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    *out = version;
    if (version < HC_STORE_SCHEMA_MIN || version > HC_STORE_SCHEMA)
        return hc_err_set(err, -EPROTO,
                          "shardgate_schema: version %ld, this health reads versions %d to %d",
                          version, HC_STORE_SCHEMA_MIN, HC_STORE_SCHEMA);
    return 0;
}

/* Each epoch id with the epoch_seq of its first row: totals are kept by epoch id, so the
 * receipts of every occurrence of an epoch that came back (docs/contract.md §7) are summed
 * under its first (docs/journal.md §10). */
#define HC_EPOCH_FIRST                                                                             \
    "(SELECT epoch, min(epoch_seq) AS epoch_seq FROM shardgate_epochs GROUP BY epoch)"

/* The receipts with their seq, and receipt_sha256 (schema version 5 on) or NULL: a receipt
 * waiting for its seq is not in the totals or the feed yet, judged once it has one
 * (docs/journal.md §10). */
#define HC_RECEIPTS(sha256)                                                                        \
    "SELECT r.seq, r.batch_id, r.fingerprint, r.epoch, r.receipt, e.epoch_seq, " sha256 " FROM "   \
    "shardgate_receipts r LEFT JOIN " HC_EPOCH_FIRST " e ON e.epoch = r.epoch WHERE r.seq IS "     \
    "NOT NULL ORDER BY r.seq"

static const char *const hc_store_queries[] = {
    "SELECT epoch_seq, epoch, first_seq, record FROM shardgate_epochs ORDER BY epoch_seq",
    HC_RECEIPTS("NULL"),
    /* in the order of hc_totals: epoch_seq, then shard ids byte by byte */
    "SELECT t.epoch, t.shard, t.weight, t.capacity, t.received, t.load, e.epoch_seq FROM "
    "shardgate_totals t LEFT JOIN " HC_EPOCH_FIRST " e ON e.epoch = t.epoch "
    "ORDER BY e.epoch_seq, t.shard COLLATE \"C\"",
    "SELECT last_seq FROM shardgate_sequencer",
};
static const char hc_receipts_sha256[] = HC_RECEIPTS("encode(r.receipt_sha256, 'hex')");

static int hc_store_tables(struct hc_pg *c, struct hc_store_snap *s, struct hc_err *err)
{
    PGresult **slots[] = {&s->epochs, &s->receipts, &s->totals, &s->sequencer};
    for (size_t i = 0; i < 4; i++) {
        int code = 0;
        const char *sql = i == 1 && s->version >= HC_STORE_SCHEMA_SHA256 ? hc_receipts_sha256
                                                                         : hc_store_queries[i];
        *slots[i] = hc_pg_select(c, sql, &code, err);
        if (*slots[i] == NULL)
            return code;
    }
    return 0;
}

int hc_store_read(struct hc_pg *c, const char *url, struct hc_store_snap *s, struct hc_err *err)
{
    memset(s, 0, sizeof *s);
    int rc = hc_pg_connect(c, url, err);
    rc = rc ? rc : hc_pg_begin(c, err);
    rc = rc ? rc : hc_store_schema(c, &s->version, err);
    rc = rc ? rc : hc_store_tables(c, s, err);
    hc_pg_end(c);
    if (rc != 0)
        hc_store_snap_free(s);
    return rc;
}

void hc_store_snap_free(struct hc_store_snap *s)
{
    PQclear(s->epochs);
    PQclear(s->receipts);
    PQclear(s->totals);
    PQclear(s->sequencer);
    memset(s, 0, sizeof *s);
}
