/* The store's own facts: rows that cannot be lines, seq gaps, the sequencer, row columns. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "digest.h"
#include "store_facts.h"
#include "verify.h"

void hc_store_count(struct hc_report *rep, uint64_t n)
{
    rep->checks += n;
    rep->evals[HC_SLOT_STORE] += n;
}

/* A record or receipt holding a newline is not one journal line: it was left out of the
 * rebuilt journal (store.c), and said so here. */
static void hc_store_newlines(const PGresult *res, int col, int key_col, const char *what,
                              const char *field, struct hc_report *rep)
{
    for (int row = 0; row < PQntuples(res); row++) {
        if (memchr(PQgetvalue(res, row, col), '\n', (size_t)PQgetlength(res, row, col)) == NULL)
            continue;
        char subject[96];
        snprintf(subject, sizeof subject, "%s %" PRId64, what, hc_store_int(res, row, key_col));
        hc_report_issue(rep, HC_SLOT_LINE, "journal_line", subject,
                        "%s: holds a newline: not one journal line (left out)", field);
    }
}

/* Seqs are 1..N without gaps: each row's seq is the previous row's + 1. */
static void hc_store_seqs(const PGresult *res, struct hc_report *rep)
{
    int64_t want = 1;
    for (int row = 0; row < PQntuples(res); row++) {
        int64_t seq = hc_store_int(res, row, HC_RC_SEQ);
        hc_store_count(rep, 1);
        char subject[64];
        snprintf(subject, sizeof subject, "shardgate_receipts seq %" PRId64, seq);
        if (seq == want + 1)
            hc_report_issue(rep, HC_SLOT_STORE, "store_seq", subject,
                            "no row with seq %" PRId64 " before it (seqs run 1..N without gaps)",
                            want);
        else if (seq > want)
            hc_report_issue(rep, HC_SLOT_STORE, "store_seq", subject,
                            "no rows with seq %" PRId64 "..%" PRId64
                            " before it (seqs run 1..N without gaps)",
                            want, seq - 1);
        want = seq + 1;
    }
}

/* shardgate_sequencer.last_seq is the highest seq given out: the last receipt row's. */
static void hc_store_sequencer(const struct hc_store_snap *s, struct hc_report *rep)
{
    int n = PQntuples(s->receipts);
    int64_t high = n ? hc_store_int(s->receipts, n - 1, HC_RC_SEQ) : 0;
    hc_store_count(rep, 1);
    if (PQntuples(s->sequencer) != 1) {
        hc_report_issue(rep, HC_SLOT_STORE, "store_sequencer", "shardgate_sequencer",
                        "no row (last_seq must be %" PRId64 ")", high);
        return;
    }
    int64_t last = hc_store_int(s->sequencer, 0, 0);
    if (last != high)
        hc_report_issue(rep, HC_SLOT_STORE, "store_sequencer", "shardgate_sequencer",
                        "last_seq: %" PRId64 " != %" PRId64
                        " (the table's, then the highest seq of shardgate_receipts)",
                        last, high);
}

/* A column against the receipt's field of the same name (the column's, then the receipt's). */
static void hc_store_column(const PGresult *res, int row, int col, const json_t *doc,
                            const char *field, const char *criterion, struct hc_report *rep)
{
    const char *have = PQgetvalue(res, row, col);
    const char *want = json_string_value(json_object_get(doc, field));
    hc_store_count(rep, 1);
    if (want != NULL && strcmp(have, want) == 0)
        return;
    char subject[64];
    snprintf(subject, sizeof subject, "shardgate_receipts seq %" PRId64,
             hc_store_int(res, row, HC_RC_SEQ));
    hc_report_issue(rep, HC_SLOT_STORE, criterion, subject,
                    "%s: %s != %s (the column's, then the receipt's)", field, have,
                    want ? want : "(none)");
}

/* Each row's batch_id and epoch columns are the receipt's (a receipt that is not a JSON object
 * is the journal verification's issue). */
static void hc_store_columns(const PGresult *res, struct hc_report *rep)
{
    for (int row = 0; row < PQntuples(res); row++) {
        json_error_t jerr;
        json_t *doc =
            json_loadb(PQgetvalue(res, row, HC_RC_RECEIPT),
                       (size_t)PQgetlength(res, row, HC_RC_RECEIPT), JSON_REJECT_DUPLICATES, &jerr);
        if (json_is_object(doc)) {
            hc_store_column(res, row, HC_RC_BATCH_ID, doc, "batch_id", "store_batch_id", rep);
            hc_store_column(res, row, HC_RC_EPOCH, doc, "epoch", "store_receipt_epoch", rep);
        }
        json_decref(doc);
    }
}

/* Schema version 5 on: each row's receipt_sha256 is the SHA-256 of its receipt's bytes, as the
 * gateway wrote it with them (docs/journal.md §10). */
static void hc_store_sha256(const PGresult *res, struct hc_report *rep)
{
    struct hc_digest *d = NULL;
    struct hc_err err;
    if (hc_digest_open("SHA256", &d, &err) != 0) {
        hc_report_issue(rep, HC_SLOT_STORE, "store_receipt_sha256", "shardgate_receipts", "%s",
                        err.msg);
        return;
    }
    for (int row = 0; row < PQntuples(res); row++) {
        unsigned char bytes[HC_DIGEST_MAX];
        char want[2 * HC_DIGEST_MAX + 1] = "";
        if (hc_digest_once(d, PQgetvalue(res, row, HC_RC_RECEIPT),
                           (size_t)PQgetlength(res, row, HC_RC_RECEIPT), bytes) == 0)
            hc_hex(bytes, hc_digest_size(d), want);
        const char *have = PQgetvalue(res, row, HC_RC_SHA256);
        hc_store_count(rep, 1);
        if (strcmp(have, want) == 0)
            continue;
        char subject[64];
        snprintf(subject, sizeof subject, "shardgate_receipts seq %" PRId64,
                 hc_store_int(res, row, HC_RC_SEQ));
        hc_report_issue(rep, HC_SLOT_STORE, "store_receipt_sha256", subject,
                        "receipt_sha256: %s != %s (the column's, then the SHA-256 of the "
                        "receipt's bytes)",
                        have, want);
    }
    hc_digest_close(d);
}

void hc_store_facts(const struct hc_store_snap *s, struct hc_report *rep)
{
    hc_store_newlines(s->epochs, HC_EP_RECORD, HC_EP_SEQ, "shardgate_epochs epoch_seq", "record",
                      rep);
    hc_store_newlines(s->receipts, HC_RC_RECEIPT, HC_RC_SEQ, "shardgate_receipts seq", "receipt",
                      rep);
    hc_store_seqs(s->receipts, rep);
    hc_store_sequencer(s, rep);
    hc_store_columns(s->receipts, rep);
    if (s->version >= HC_STORE_SCHEMA_SHA256)
        hc_store_sha256(s->receipts, rep);
}
