/* The journal a --store database holds, rebuilt and verified, then the database's own facts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_facts.h"
#include "store_read.h"

void hc_store_init(struct hc_store *st, const char *url, struct hc_journal *j)
{
    memset(st, 0, sizeof *st);
    st->url = url;
    st->j = j;
}

void hc_store_free(struct hc_store *st)
{
    hc_pg_close(&st->pg);
    hc_text_free(&st->text);
    free(st->rows);
    st->rows = NULL;
    st->cap_rows = 0;
}

/* A row's record or receipt holding a newline is left out (store_facts.c says so). */
static int hc_store_one_line(const PGresult *res, int row, int col)
{
    return memchr(PQgetvalue(res, row, col), '\n', (size_t)PQgetlength(res, row, col)) == NULL;
}

/* The receipt record line of docs/journal.md §2: keys in that order, the receipt's bytes as
 * stored. */
static int hc_store_receipt_line(struct hc_text *t, const PGresult *res, int row)
{
    int rc =
        hc_text_printf(t, "{\"type\":\"receipt\",\"seq\":%s,\"fingerprint\":\"%s\",\"receipt\":",
                       PQgetvalue(res, row, HC_RC_SEQ), PQgetvalue(res, row, HC_RC_FINGERPRINT));
    rc = rc ? rc
            : hc_text_add(t, PQgetvalue(res, row, HC_RC_RECEIPT),
                          (size_t)PQgetlength(res, row, HC_RC_RECEIPT));
    return rc ? rc : hc_text_str(t, "}\n");
}

static int hc_store_epoch_line(struct hc_text *t, const PGresult *res, int row)
{
    int rc = hc_text_add(t, PQgetvalue(res, row, HC_EP_RECORD),
                         (size_t)PQgetlength(res, row, HC_EP_RECORD));
    return rc ? rc : hc_text_str(t, "\n");
}

/* Appends row (an epoch when epoch, else a receipt) as the next line and names it. */
static int hc_store_line(struct hc_store *st, const PGresult *res, int row, int epoch, size_t *n)
{
    if (!hc_store_one_line(res, row, epoch ? HC_EP_RECORD : HC_RC_RECEIPT))
        return 0;
    st->rows[(*n)++] = (struct hc_row_name){epoch, hc_store_int(res, row, 0)};
    return epoch ? hc_store_epoch_line(&st->text, res, row)
                 : hc_store_receipt_line(&st->text, res, row);
}

/* The journal in its order: the epochs by epoch_seq, the receipts by seq, and an epoch with
 * first_seq S before the receipt with seq S (docs/journal.md §2). */
static int hc_store_text(struct hc_store *st, const struct hc_store_snap *s)
{
    int ne = PQntuples(s->epochs), nr = PQntuples(s->receipts), e = 0, r = 0, rc = 0;
    size_t need = (size_t)ne + (size_t)nr + 1, n = 0;
    if (need > st->cap_rows) {
        struct hc_row_name *grown = realloc(st->rows, need * sizeof *grown);
        if (grown == NULL)
            return -ENOMEM;
        st->rows = grown;
        st->cap_rows = need;
    }
    st->text.n = 0;
    rc = hc_text_str(&st->text, "");
    while (rc == 0 && (e < ne || r < nr)) {
        int epoch = e < ne && (r == nr || hc_store_int(s->epochs, e, HC_EP_FIRST_SEQ) <=
                                              hc_store_int(s->receipts, r, HC_RC_SEQ));
        rc = epoch ? hc_store_line(st, s->epochs, e++, 1, &n)
                   : hc_store_line(st, s->receipts, r++, 0, &n);
    }
    return rc;
}

/* The marks of hc_store_moved, as the snapshot has them ("" for none). */
static void hc_store_marks(struct hc_store *st, const struct hc_store_snap *s)
{
    const PGresult *res[3] = {s->sequencer, s->epochs, s->receipts};
    for (int i = 0; i < 3; i++) {
        int n = PQntuples(res[i]);
        snprintf(st->mark[i], sizeof st->mark[i], "%s", n ? PQgetvalue(res[i], n - 1, 0) : "");
    }
}

int hc_store_verify(struct hc_store *st, struct hc_err *err)
{
    struct hc_store_snap s;
    st->verified = 0;
    int rc = hc_store_read(&st->pg, st->url, &s, err);
    if (rc != 0) {
        hc_journal_reread(st->j);
        return rc;
    }
    rc = hc_store_text(st, &s);
    if (rc != 0)
        rc = hc_err_set(err, rc, "out of memory");
    else
        rc = hc_journal_buffer(st->j, st->text.p, st->text.n, st->rows, err);
    if (rc == 0)
        hc_store_facts(&s, st->j->v->report);
    if (rc == 0)
        rc = hc_store_totals(&s, st->j->v->report, err);
    if (rc == 0) {
        hc_store_marks(st, &s);
        st->verified = 1;
    } else {
        hc_journal_reread(st->j);
    }
    hc_store_snap_free(&s);
    return rc;
}

int hc_store_moved(struct hc_store *st, struct hc_err *err)
{
    if (!st->verified)
        return 1;
    int rc = hc_pg_connect(&st->pg, st->url, err);
    PGresult *res = rc ? NULL
                       : hc_pg_select(&st->pg,
                                      "SELECT (SELECT last_seq FROM shardgate_sequencer), "
                                      "(SELECT max(epoch_seq) FROM shardgate_epochs), "
                                      "(SELECT max(seq) FROM shardgate_receipts)",
                                      &rc, err);
    if (res == NULL) {
        st->verified = 0; /* the verdict stands no more: the next call reads everything */
        return rc;
    }
    int moved = 0;
    for (int i = 0; i < 3; i++)
        moved |= strcmp(PQgetvalue(res, 0, i), st->mark[i]) != 0;
    PQclear(res);
    return moved;
}
