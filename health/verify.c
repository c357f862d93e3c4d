/* Runs the criteria table over a receipt after re-deriving its facts from the epoch's ring. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "epoch_id.h"
#include "verify.h"

int hc_verifier_init(struct hc_verifier *v, struct hc_report *report, size_t n_criteria,
                     struct hc_err *err)
{
    memset(v, 0, sizeof *v);
    v->report = report;
    v->n_criteria = n_criteria < hc_criteria_count ? n_criteria : hc_criteria_count;
    v->max_changes = HC_MAX_CHANGES_DEFAULT;
    return hc_digest_open("SHA256", &v->sha256, err);
}

static void hc_derived_free(struct hc_derived *d)
{
    free(d->hash);
    free(d->hit);
    free(d->load);
    free(d->received);
    free(d->over);
    free(d->order);
    free(d->sorted);
    free(d->sorted_hit);
    free(d->ids);
    free(d->home);
    hc_spill_free(&d->spill);
    memset(d, 0, sizeof *d);
}

void hc_verifier_free(struct hc_verifier *v)
{
    hc_digest_close(v->sha256);
    hc_derived_free(&v->d);
    memset(v, 0, sizeof *v);
}

int hc_epoch_make(struct hc_epoch *ep, const struct hc_contract *c, struct hc_membership *m,
                  long line, struct hc_err *err)
{
    ep->contract = *c;
    ep->members = *m;
    memset(m, 0, sizeof *m);
    ep->line = line;
    ep->ring_built = 0;
    int rc = hc_ring_id(&ep->contract, &ep->members, ep->ring_id, err);
    rc = rc ? rc : hc_epoch_id(&ep->contract, &ep->members, ep->epoch_id, err);
    ep->usable = rc == 0;
    return rc;
}

int hc_epoch_ring(struct hc_epoch *ep, struct hc_err *err)
{
    if (ep->ring_built)
        return 0;
    int rc = hc_ring_build(&ep->contract, &ep->members, &ep->ring, err);
    ep->ring_built = rc == 0;
    return rc;
}

void hc_epoch_free(struct hc_epoch *ep)
{
    if (ep->ring_built)
        hc_ring_free(&ep->ring);
    hc_membership_free(&ep->members);
    memset(ep, 0, sizeof *ep);
}

void hc_run_count(struct hc_run *run, uint64_t n)
{
    run->report->checks += n;
    run->report->evals[run->slot] += n;
}

void hc_run_fail(struct hc_run *run, const char *fmt, ...)
{
    char detail[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    hc_report_issue(run->report, run->slot, run->name, run->subject, "%s", detail);
}

static int hc_grow(void **p, size_t n, size_t size)
{
    void *q = realloc(*p, (n ? n : 1) * size);
    if (q == NULL)
        return -ENOMEM;
    *p = q;
    return 0;
}

/* Sizes the scratch arrays for n placements and m shards. */
static int hc_derived_reserve(struct hc_derived *d, size_t n, size_t m)
{
    if (n > d->cap_pl) {
        if (hc_grow((void **)&d->hash, n, sizeof *d->hash) ||
            hc_grow((void **)&d->hit, n, sizeof *d->hit) ||
            hc_grow((void **)&d->order, n, sizeof *d->order) ||
            hc_grow((void **)&d->sorted, n, sizeof *d->sorted) ||
            hc_grow((void **)&d->sorted_hit, n, sizeof *d->sorted_hit) ||
            hc_grow((void **)&d->ids, n, sizeof *d->ids) ||
            hc_grow((void **)&d->home, n, sizeof *d->home))
            return -ENOMEM;
        d->cap_pl = n;
    }
    if (m > d->cap_sh || d->load == NULL) {
        if (hc_grow((void **)&d->load, m, sizeof *d->load) ||
            hc_grow((void **)&d->received, m, sizeof *d->received) ||
            hc_grow((void **)&d->over, m, sizeof *d->over))
            return -ENOMEM;
        d->cap_sh = m;
    }
    return 0;
}

static int hc_u64_cmp(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

/* Under spill, moves the home placements in hit[] where rules 1-3 of docs/contract.md §9 say. */
static int hc_derive_spill(struct hc_derived *d, struct hc_epoch *ep, const struct hc_receipt *r,
                           struct hc_err *err)
{
    if (ep->contract.policy != HC_POLICY_SPILL)
        return 0;
    if (hc_spill_reserve(&d->spill, ep->members.n, ep->ring.n) != 0)
        return hc_err_set(err, -ENOMEM, "out of memory");
    d->spilled = hc_spill_replay(&d->spill, &ep->ring, &ep->members, r, d->hash, d->hit, d->home);
    return 0;
}

/* Places every key of r: along the ring (the key hashes sorted and merged with its points), or
 * under maglev and jump at its table's slot (docs/contract.md §11, §10). */
static int hc_derive_hits(struct hc_derived *d, struct hc_epoch *ep, const struct hc_receipt *r,
                          struct hc_err *err)
{
    struct hc_ring *ring = &ep->ring;
    if (ep->contract.ring != HC_RING_KETAMA) {
        for (size_t i = 0; i < r->n_pl; i++)
            if (hc_ring_place_table(ring, r->pl[i].key.p, r->pl[i].key.n, &d->hit[i]) != 0)
                return hc_err_set(err, -EIO, "digest failed");
        return 0;
    }
    if (r->n_pl > UINT32_MAX)
        return hc_err_set(err, -E2BIG, "too many placements");
    qsort(d->order, r->n_pl, sizeof *d->order, hc_u64_cmp);
    for (size_t i = 0; i < r->n_pl; i++)
        d->sorted[i] = (uint32_t)(d->order[i] >> 32);
    hc_ring_place_sorted(ring, d->sorted, r->n_pl, d->sorted_hit);
    for (size_t i = 0; i < r->n_pl; i++)
        d->hit[d->order[i] & 0xffffffffu] = d->sorted_hit[i];
    return hc_derive_spill(d, ep, r, err);
}

/* Re-derives every fact of r from ep alone: key hashes, placements, loads by size, received
 * counts, over-capacity, ok. */
static int hc_derive(struct hc_derived *d, struct hc_epoch *ep, const struct hc_receipt *r,
                     struct hc_err *err)
{
    const struct hc_membership *m = &ep->members;
    if (hc_derived_reserve(d, r->n_pl, m->n) != 0)
        return hc_err_set(err, -ENOMEM, "out of memory");
    int rc = hc_epoch_ring(ep, err);
    if (rc != 0)
        return rc;
    struct hc_ring *ring = &ep->ring;
    d->ring_empty = ep->contract.ring != HC_RING_KETAMA ? ring->table == NULL : ring->n == 0;
    /* The 32-bit key hashes: ketama's placements and placement_hash; a table's slots come from
     * the key's 64 bits, digested once in hc_derive_hits. */
    for (size_t i = 0; ep->contract.ring == HC_RING_KETAMA && i < r->n_pl; i++) {
        if (hc_ring_key_hash(ring, r->pl[i].key.p, r->pl[i].key.n, &d->hash[i]) != 0)
            return hc_err_set(err, -EIO, "digest failed");
        d->order[i] = (uint64_t)d->hash[i] << 32 | (uint64_t)i;
    }
    memset(d->load, 0, m->n * sizeof *d->load);
    memset(d->received, 0, m->n * sizeof *d->received);
    memset(d->over, 0, m->n * sizeof *d->over);
    d->over_count = 0;
    d->spilled = 0;
    for (size_t i = 0; i < r->n_pl; i++)
        d->home[i] = -1;
    if (!d->ring_empty && r->n_pl > 0) {
        rc = hc_derive_hits(d, ep, r, err);
        if (rc != 0)
            return rc;
        for (size_t i = 0; i < r->n_pl; i++) {
            uint32_t s = d->hit[i].shard;
            uint64_t size = (uint64_t)r->pl[i].size;
            d->load[s] = d->load[s] > UINT64_MAX - size ? UINT64_MAX : d->load[s] + size;
            d->received[s]++;
        }
    }
    for (size_t s = 0; s < m->n; s++) {
        d->over[s] =
            m->shards[s].state == HC_STATE_ONLINE && d->load[s] > (uint64_t)m->shards[s].capacity;
        d->over_count += (uint64_t)d->over[s];
    }
    /* ok: every change placed on an online shard, and no online shard over capacity. */
    d->ok = (r->n_pl == 0 || !d->ring_empty) && d->over_count == 0;
    return 0;
}

static void hc_run_scope(struct hc_verifier *v, struct hc_report *report, enum hc_scope scope,
                         struct hc_run *run)
{
    run->v = v;
    run->report = report;
    for (size_t i = 0; i < v->n_criteria; i++) {
        if (hc_criteria[i].scope != scope)
            continue;
        run->slot = (int)i;
        run->name = hc_criteria[i].name;
        hc_criteria[i].fn(run);
    }
}

int hc_verify_receipt(struct hc_verifier *v, const json_t *doc, struct hc_epoch *ep,
                      const struct hc_record *rec, const char *fallback_subject, struct hc_err *err)
{
    struct hc_receipt r;
    struct hc_err what;
    v->report->receipts++;
    int rc = hc_receipt_decode(doc, &r, &what);
    char subject[160];
    const char *bid = json_string_value(json_object_get(doc, "batch_id"));
    if (bid != NULL)
        snprintf(subject, sizeof subject, "%.128s", bid);
    else
        snprintf(subject, sizeof subject, "%s", fallback_subject);
    if (rc == -ENOMEM) {
        hc_receipt_free(&r);
        return hc_err_set(err, rc, "%s", what.msg);
    }
    if (rc != 0) {
        hc_report_issue(v->report, HC_SLOT_SCHEMA, "schema", subject, "%s", what.msg);
        hc_receipt_free(&r);
        return 0;
    }
    v->report->placements += r.n_pl;
    struct hc_run run = {.subject = subject, .r = &r, .rec = rec};
    hc_run_scope(v, v->report, HC_SCOPE_BATCH, &run);
    if (rec != NULL)
        hc_run_scope(v, v->report, HC_SCOPE_RECORD, &run);
    if (ep != NULL && ep->usable) {
        rc = hc_derive(&v->d, ep, &r, err);
        if (rc != 0) {
            hc_receipt_free(&r);
            return rc;
        }
        run.ep = ep;
        run.d = &v->d;
        hc_run_scope(v, v->report, HC_SCOPE_RECEIPT, &run);
    }
    hc_receipt_free(&r);
    return 0;
}

void hc_verify_epoch(struct hc_verifier *v, const struct hc_epoch *ep)
{
    char subject[48];
    snprintf(subject, sizeof subject, "epoch@line %ld", ep->line);
    struct hc_run run = {.subject = subject, .ep = ep};
    hc_run_scope(v, v->report, HC_SCOPE_EPOCH, &run);
}

void hc_verify_end(struct hc_verifier *v, struct hc_report *report,
                   const struct hc_journal_end *end)
{
    struct hc_run run = {.subject = "journal", .end = end};
    hc_run_scope(v, report, HC_SCOPE_END, &run);
}

/* Feeds s to the digest as a JSON string the way decisions.md writes one: '"' and '\' escaped,
 * control bytes as \b \f \n \r \t or \u00xx, every other byte raw. */
static int hc_digest_json_string(struct hc_digest *d, struct hc_str s)
{
    char buf[512];
    size_t n = 0;
    buf[n++] = '"';
    for (size_t i = 0; i < s.n; i++) {
        if (n > sizeof buf - 8) {
            if (hc_digest_update(d, buf, n) != 0)
                return -EIO;
            n = 0;
        }
        unsigned char c = (unsigned char)s.p[i];
        const char *esc = NULL;
        switch (c) {
        case '"':
            esc = "\\\"";
            break;
        case '\\':
            esc = "\\\\";
            break;
        case '\b':
            esc = "\\b";
            break;
        case '\f':
            esc = "\\f";
            break;
        case '\n':
            esc = "\\n";
            break;
        case '\r':
            esc = "\\r";
            break;
        case '\t':
            esc = "\\t";
            break;
        default:
            break;
        }
        if (esc != NULL) {
            buf[n++] = esc[0];
            buf[n++] = esc[1];
        } else if (c < 0x20) {
            n += (size_t)snprintf(buf + n, 7, "\\u%04x", c);
        } else {
            buf[n++] = (char)c;
        }
    }
    buf[n++] = '"';
    return hc_digest_update(d, buf, n);
}

int hc_fingerprint(struct hc_digest *sha256, const struct hc_receipt *r, char hex[65])
{
    char num[32];
    int rc = hc_digest_begin(sha256);
    rc = rc ? rc : hc_digest_update(sha256, "{\"batch_id\":", 12);
    rc = rc ? rc : hc_digest_json_string(sha256, r->batch_id);
    rc = rc ? rc : hc_digest_update(sha256, ",\"changes\":[", 12);
    for (size_t i = 0; rc == 0 && i < r->n_pl; i++) {
        rc = hc_digest_update(sha256, i ? ",{\"id\":" : "{\"id\":", i ? 7 : 6);
        rc = rc ? rc : hc_digest_json_string(sha256, r->pl[i].id);
        rc = rc ? rc : hc_digest_update(sha256, ",\"key\":", 7);
        rc = rc ? rc : hc_digest_json_string(sha256, r->pl[i].key);
        int len = snprintf(num, sizeof num, ",\"size\":%lld}", (long long)r->pl[i].size);
        rc = rc ? rc : hc_digest_update(sha256, num, (size_t)len);
    }
    rc = rc ? rc : hc_digest_update(sha256, "]}", 2);
    unsigned char out[HC_DIGEST_MAX];
    rc = rc ? rc : hc_digest_end(sha256, out);
    if (rc == 0)
        hc_hex(out, 32, hex);
    return rc;
}

size_t hc_slot_names(const char **names, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < hc_criteria_count && n < max; i++)
        names[n++] = hc_criteria[i].name;
    static const char *const extra[] = {
        "schema",          "journal_line", "epoch_record", "journal_segment", "journal_checkpoint",
        "journal_archive", "store"};
    for (size_t i = 0; i < 7 && n < max; i++)
        names[n++] = extra[i];
    return n;
}
