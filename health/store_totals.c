/* shardgate_totals against the sums over the receipts' placements (docs/operations.md §1.7). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "membership.h"
#include "store_facts.h"
#include "text.h"
#include "totals.h"
#include "verify.h"

/* One receipt's placements into t under epoch_seq: received 1 and load its size each. */
static int hc_store_placements(const json_t *doc, int64_t epoch_seq, struct hc_totals *t)
{
    size_t i;
    const json_t *pl;
    json_array_foreach(json_object_get(doc, "placements"), i, pl)
    {
        const json_t *shard = json_object_get(pl, "shard");
        json_int_t size = json_integer_value(json_object_get(pl, "size"));
        if (!json_is_string(shard) || size < 0)
            continue; /* unplaced, or a schema issue already */
        if (hc_totals_add(t, epoch_seq, json_string_value(shard), json_string_length(shard),
                          (uint64_t)size, 1) != 0)
            return -ENOMEM;
    }
    return 0;
}

/* The sums of every receipt row, by the epoch_seq of its epoch column (a receipt that does not
 * parse is the journal verification's issue). */
static int hc_store_sums(const PGresult *res, struct hc_totals *t)
{
    int rc = 0;
    for (int row = 0; rc == 0 && row < PQntuples(res); row++) {
        if (PQgetisnull(res, row, HC_RC_EPOCH_SEQ))
            continue; /* no such epoch: the foreign key forbids it */
        json_error_t jerr;
        json_t *doc =
            json_loadb(PQgetvalue(res, row, HC_RC_RECEIPT),
                       (size_t)PQgetlength(res, row, HC_RC_RECEIPT), JSON_REJECT_DUPLICATES, &jerr);
        if (json_is_object(doc))
            rc = hc_store_placements(doc, hc_store_int(res, row, HC_RC_EPOCH_SEQ), t);
        json_decref(doc);
    }
    return rc;
}

/* A numeric column holding a plain non-negative integer; -1 when it holds anything else. */
static int hc_store_u128(const char *text, unsigned __int128 *out)
{
    size_t n = strlen(text);
    if (n == 0 || n > 38 || strspn(text, "0123456789") != n)
        return -1;
    *out = 0;
    for (size_t i = 0; i < n; i++)
        *out = *out * 10 + (unsigned)(text[i] - '0');
    return 0;
}

/* ", received: 3 != 2" when the column differs from want (the row's, then health's). */
static int hc_store_differ(struct hc_text *d, const char *name, const char *have,
                           unsigned __int128 want)
{
    unsigned __int128 v;
    if (hc_store_u128(have, &v) == 0 && v == want)
        return 0;
    int rc = hc_text_printf(d, "%s%s: %s != ", d->n ? ", " : "", name, have);
    return rc ? rc : hc_text_u128(d, want);
}

/* One row against the sums (zero for a row no placement accounts for). */
static int hc_store_row(const PGresult *res, int row, const struct hc_tot_shard *want,
                        struct hc_report *rep)
{
    char subject[256];
    snprintf(subject, sizeof subject, "shardgate_totals epoch %s shard %s",
             PQgetvalue(res, row, HC_TT_EPOCH), PQgetvalue(res, row, HC_TT_SHARD));
    hc_store_count(rep, 1);
    if (PQgetisnull(res, row, HC_TT_EPOCH_SEQ)) {
        hc_report_issue(rep, HC_SLOT_STORE, "store_totals", subject,
                        "epoch: not in shardgate_epochs");
        return 0;
    }
    struct hc_text d = {0};
    int rc = hc_store_differ(&d, "received", PQgetvalue(res, row, HC_TT_RECEIVED),
                             want ? want->received : 0);
    rc = rc ? rc
            : hc_store_differ(&d, "load", PQgetvalue(res, row, HC_TT_LOAD), want ? want->load : 0);
    if (rc == 0 && d.n > 0)
        hc_report_issue(rep, HC_SLOT_STORE, "store_totals", subject, "%s", d.p);
    hc_text_free(&d);
    return rc;
}

/* Sums with no row: a shard that received a placement has its row. */
static int hc_store_missing(const struct hc_store_snap *s, int64_t epoch_seq,
                            const struct hc_tot_shard *want, struct hc_report *rep)
{
    const char *epoch = "(unknown)";
    for (int row = 0; row < PQntuples(s->epochs); row++)
        if (hc_store_int(s->epochs, row, HC_EP_SEQ) == epoch_seq)
            epoch = PQgetvalue(s->epochs, row, HC_EP_EPOCH);
    char subject[256];
    snprintf(subject, sizeof subject, "shardgate_totals epoch %s shard %.*s", epoch,
             (int)want->id_len, want->id);
    struct hc_text d = {0};
    int rc = hc_text_str(&d, "no row, the receipts' placements give received ");
    rc = rc ? rc : hc_text_u128(&d, want->received);
    rc = rc ? rc : hc_text_str(&d, ", load ");
    rc = rc ? rc : hc_text_u128(&d, want->load);
    hc_store_count(rep, 1);
    if (rc == 0)
        hc_report_issue(rep, HC_SLOT_STORE, "store_totals", subject, "%s", d.p);
    hc_text_free(&d);
    return rc;
}

/* The sums in their order (epoch_seq, then shard id), one at a time. */
struct hc_sums_walk {
    const struct hc_totals *t;
    size_t e, k;
};

static const struct hc_tot_shard *hc_walk_at(struct hc_sums_walk *w, int64_t *epoch_seq)
{
    while (w->e < w->t->n_ep && w->k >= w->t->ep[w->e].shards.n) {
        w->e++;
        w->k = 0;
    }
    if (w->e == w->t->n_ep)
        return NULL;
    *epoch_seq = w->t->ep[w->e].epoch_seq;
    return &w->t->ep[w->e].shards.s[w->k];
}

/* Orders a row (its epoch_seq, NULL last, then shard) against the sums at (epoch_seq, want). */
static int hc_row_cmp(const PGresult *res, int row, int64_t epoch_seq,
                      const struct hc_tot_shard *want)
{
    if (PQgetisnull(res, row, HC_TT_EPOCH_SEQ))
        return 1;
    int64_t have = hc_store_int(res, row, HC_TT_EPOCH_SEQ);
    if (have != epoch_seq)
        return have < epoch_seq ? -1 : 1;
    return hc_id_cmp(PQgetvalue(res, row, HC_TT_SHARD), (size_t)PQgetlength(res, row, HC_TT_SHARD),
                     want->id, want->id_len);
}

/* Walks the rows (in the same order, store_read.c) and the sums together. */
static int hc_store_compare(const struct hc_store_snap *s, const struct hc_totals *t,
                            struct hc_report *rep)
{
    const PGresult *res = s->totals;
    struct hc_sums_walk w = {t, 0, 0};
    int row = 0, n = PQntuples(res), rc = 0;
    for (;;) {
        int64_t epoch_seq = 0;
        const struct hc_tot_shard *want = hc_walk_at(&w, &epoch_seq);
        if (rc != 0 || (row == n && want == NULL))
            return rc;
        int c = row == n ? 1 : want == NULL ? -1 : hc_row_cmp(res, row, epoch_seq, want);
        if (c <= 0)
            rc = hc_store_row(res, row++, c == 0 ? want : NULL, rep);
        else
            rc = hc_store_missing(s, epoch_seq, want, rep);
        if (c >= 0)
            w.k++;
    }
}

int hc_store_totals(const struct hc_store_snap *s, struct hc_report *rep, struct hc_err *err)
{
    struct hc_totals t = {0};
    int rc = hc_store_sums(s->receipts, &t);
    rc = rc ? rc : hc_store_compare(s, &t, rep);
    hc_totals_free(&t);
    return rc ? hc_err_set(err, rc, "out of memory") : 0;
}
