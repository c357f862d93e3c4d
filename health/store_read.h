/* One read-only snapshot of a --store database: the rows health verifies. */
#ifndef HC_STORE_READ_H
#define HC_STORE_READ_H

#include <stdint.h>

#include "pg.h"

/* The schema versions this health reads (db/migrations, docs/operations.md §1.7): 5 gives each
 * receipt row its receipt_sha256; 2 lets receipts wait for their seq (those are not judged until
 * they have one); 1 gave the seq at commit. */
#define HC_STORE_SCHEMA_MIN 1
#define HC_STORE_SCHEMA 5
#define HC_STORE_SCHEMA_SHA256 5

/* Columns of each result, in the order of the SELECTs of store_read.c. */
enum { HC_EP_SEQ, HC_EP_EPOCH, HC_EP_FIRST_SEQ, HC_EP_RECORD };
/* HC_RC_EPOCH_SEQ and HC_TT_EPOCH_SEQ: the epoch_seq of the first row of the row's epoch, NULL
 * when none. HC_RC_SHA256: receipt_sha256 in hex, NULL before schema version 5. */
enum {
    HC_RC_SEQ,
    HC_RC_BATCH_ID,
    HC_RC_FINGERPRINT,
    HC_RC_EPOCH,
    HC_RC_RECEIPT,
    HC_RC_EPOCH_SEQ,
    HC_RC_SHA256
};
enum {
    HC_TT_EPOCH,
    HC_TT_SHARD,
    HC_TT_WEIGHT,
    HC_TT_CAPACITY,
    HC_TT_RECEIVED,
    HC_TT_LOAD,
    HC_TT_EPOCH_SEQ
};

struct hc_store_snap {
    long version;        /* shardgate_schema's */
    PGresult *epochs;    /* shardgate_epochs by epoch_seq */
    PGresult *receipts;  /* shardgate_receipts by seq */
    PGresult *totals;    /* shardgate_totals by epoch_seq, shard */
    PGresult *sequencer; /* shardgate_sequencer: last_seq (one row, or none) */
};

/* Reads every table in one snapshot (BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY), after
 * checking the schema. Returns 0, or a negative code with err = why health cannot judge:
 * -ENOTCONN unreachable or lost, -ENOENT no shardgate schema, -EPROTO another version or a
 * failed statement, -EACCES permission denied, -ENOMEM. s is empty on error. */
int hc_store_read(struct hc_pg *c, const char *url, struct hc_store_snap *s, struct hc_err *err);
void hc_store_snap_free(struct hc_store_snap *s);

/* A bigint column as int64 (0 when it does not parse: the CHECKs keep them >= 0). */
int64_t hc_store_int(const PGresult *res, int row, int col);

#endif
