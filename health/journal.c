/* Journal reader: verifies journal.jsonl line by line, from where the last call stopped. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"
#include "epoch_record.h"
#include "journal.h"
#include "line_crc.h"

/* --- the batch ids seen so far: open addressing, FNV-1a --------------------------------- */

struct hc_batch_slot {
    char *id; /* NULL: empty */
    size_t len;
    uint64_t hash;
    long line;
};

struct hc_batch_set {
    struct hc_batch_slot *slots;
    size_t cap, n; /* cap is a power of two */
};

static uint64_t hc_fnv(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
    return h;
}

static void hc_batch_set_free(struct hc_batch_set *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->cap; i++)
        free(s->slots[i].id);
    free(s->slots);
    free(s);
}

static int hc_batch_set_grow(struct hc_batch_set *s)
{
    size_t cap = s->cap ? s->cap * 2 : 1024;
    struct hc_batch_slot *slots = calloc(cap, sizeof *slots);
    if (slots == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < s->cap; i++) {
        if (s->slots[i].id == NULL)
            continue;
        size_t k = s->slots[i].hash & (cap - 1);
        while (slots[k].id != NULL)
            k = (k + 1) & (cap - 1);
        slots[k] = s->slots[i];
    }
    free(s->slots);
    s->slots = slots;
    s->cap = cap;
    return 0;
}

/* Adds id seen on line; returns 0, the earlier line when already present, or -ENOMEM. */
static long hc_batch_set_add(struct hc_batch_set *s, const char *id, size_t len, long line)
{
    if ((s->n + 1) * 2 > s->cap && hc_batch_set_grow(s) != 0)
        return -ENOMEM;
    uint64_t h = hc_fnv(id, len);
    size_t k = h & (s->cap - 1);
    while (s->slots[k].id != NULL) {
        if (s->slots[k].hash == h && s->slots[k].len == len && memcmp(s->slots[k].id, id, len) == 0)
            return s->slots[k].line;
        k = (k + 1) & (s->cap - 1);
    }
    char *copy = malloc(len + 1);
    if (copy == NULL)
        return -ENOMEM;
    memcpy(copy, id, len);
    copy[len] = '\0';
    s->slots[k] = (struct hc_batch_slot){copy, len, h, line};
    s->n++;
    return 0;
}

/* --- state ------------------------------------------------------------------------------- */

void hc_journal_init(struct hc_journal *j, const char *path, struct hc_verifier *v,
                     const struct hc_epoch *own)
{
    memset(j, 0, sizeof *j);
    j->path = path;
    j->v = v;
    j->own = own;
    hc_parser_init(&j->parser);
}

void hc_journal_forget(struct hc_journal *j)
{
    for (size_t i = 0; i < j->n_epochs; i++) {
        hc_epoch_free(j->epochs[i]);
        free(j->epochs[i]);
    }
    free(j->epochs);
    j->epochs = NULL;
    j->n_epochs = j->cap_epochs = 0;
    hc_batch_set_free(j->batches);
    j->batches = NULL;
    j->prev_seq = 0;
    j->used_own = 0;
    j->offset = 0;
    j->tail_len = 0;
    j->pending = 0;
    j->line = 0;
    j->have_identity = 0;
    hc_seg_free(j);
    hc_report_reset(j->v->report);
}

void hc_journal_free(struct hc_journal *j)
{
    hc_journal_forget(j);
    free(j->lines);
    j->lines = NULL;
    free(j->records);
    j->records = NULL;
    j->records_cap = 0;
    free(j->buf);
    j->buf = NULL;
    j->buf_cap = 0;
    hc_parser_free(&j->parser);
    j->cap_lines = 0;
}

void hc_journal_end_state(const struct hc_journal *j, struct hc_journal_end *end)
{
    end->latest = j->n_epochs ? j->epochs[j->n_epochs - 1] : NULL;
    end->own = j->own;
}

/* --- records ----------------------------------------------------------------------------- */

/* Appends a new, empty epoch for the current line; returns 0 or -ENOMEM with err set. */
static int hc_journal_new_epoch(struct hc_journal *j, struct hc_epoch **out, struct hc_err *err)
{
    if (j->n_epochs == j->cap_epochs) {
        size_t cap = j->cap_epochs ? j->cap_epochs * 2 : 8;
        struct hc_epoch **grown = realloc(j->epochs, cap * sizeof *grown);
        if (grown == NULL)
            return hc_err_set(err, -ENOMEM, "out of memory");
        j->epochs = grown;
        j->cap_epochs = cap;
    }
    struct hc_epoch *ep = calloc(1, sizeof *ep);
    if (ep == NULL)
        return hc_err_set(err, -ENOMEM, "out of memory");
    ep->line = j->line;
    j->epochs[j->n_epochs++] = ep;
    *out = ep;
    return 0;
}

static int hc_journal_epoch(struct hc_journal *j, const json_t *rec, struct hc_str raw,
                            struct hc_err *err)
{
    struct hc_epoch *ep = NULL;
    int rc = hc_journal_new_epoch(j, &ep, err);
    if (rc != 0)
        return rc;
    ep->chain.before = j->n_epochs > 1 ? j->epochs[j->n_epochs - 2] : NULL;
    ep->chain.position = (int64_t)j->n_epochs;
    ep->chain.last_seq = j->prev_seq;
    char subject[112], where[96];
    hc_seg_where(j, where, sizeof where);
    snprintf(subject, sizeof subject, "epoch@%s", where);
    int seed = j->seg != NULL && j->seg->seeding; /* the chain before it is archived, unread */
    struct hc_err what;
    rc = hc_epoch_record_decode(rec, j->line, ep, &what);
    if (rc == -EINVAL) {
        ep->usable = 0;
        hc_report_issue(j->v->report, HC_SLOT_EPOCH_RECORD, "epoch_record", subject, "%s",
                        what.msg);
        return hc_seg_epoch(j, ep, raw.p, raw.n) ? hc_err_set(err, -ENOMEM, "out of memory") : 0;
    }
    if (rc != 0)
        return hc_err_set(err, rc, "%s", what.msg);
    if (hc_seg_epoch(j, ep, raw.p, raw.n) != 0)
        return hc_err_set(err, -ENOMEM, "out of memory");
    long at = hc_canon_epoch_record(ep, raw);
    if (at >= 0)
        hc_report_issue(j->v->report, HC_SLOT_EPOCH_RECORD, "epoch_record", subject,
                        "not the bytes the gateway writes for this record (first difference at "
                        "byte %ld, column %ld)",
                        at, at + 1);
    if (!seed)
        hc_verify_epoch(j->v, ep);
    return 0;
}

/* The name a receipt gives its epoch: "epoch" in version 2, ring.id in version 1. */
static const char *hc_receipt_names(const json_t *receipt, int *by_epoch)
{
    const char *epoch = json_string_value(json_object_get(receipt, "epoch"));
    const json_t *ring = json_object_get(receipt, "ring");
    *by_epoch = epoch != NULL;
    const char *s = epoch ? epoch : json_string_value(json_object_get(ring, "id"));
    return s ? s : "";
}

/* A receipt is judged against the epoch it names (docs/contract.md §7): the latest epoch
 * record before it with that epoch id (version 2) or that ring id (version 1). One naming none
 * is flagged and judged against the epoch in force (the latest record), one before any epoch
 * record against the service's own contract + shards. Sets r->match, r->named, r->in_force;
 * returns the epoch to judge against. */
static struct hc_epoch *hc_receipt_epoch(struct hc_journal *j, const json_t *receipt,
                                         struct hc_record *r)
{
    if (j->n_epochs == 0) {
        r->match = HC_MATCH_NO_EPOCH;
        j->used_own = 1;
        return (struct hc_epoch *)j->own;
    }
    int by_epoch;
    const char *name = hc_receipt_names(receipt, &by_epoch);
    struct hc_epoch *in_force = j->epochs[j->n_epochs - 1];
    r->in_force = in_force;
    r->match = HC_MATCH_NONE;
    for (size_t i = j->n_epochs; i-- > 0;) {
        struct hc_epoch *e = j->epochs[i];
        const char *has = by_epoch ? e->chain.epoch : e->recorded_id;
        if (has[0] != '\0' && strcmp(name, has) == 0) {
            r->match = HC_MATCH_KNOWN;
            r->named = e;
            return e;
        }
    }
    return in_force;
}

static int hc_journal_receipt(struct hc_journal *j, const json_t *rec, struct hc_str raw,
                              struct hc_err *err)
{
    char subject[96];
    hc_seg_where(j, subject, sizeof subject);
    const json_t *seq = json_object_get(rec, "seq");
    const json_t *fp = json_object_get(rec, "fingerprint");
    const json_t *receipt = json_object_get(rec, "receipt");
    const char *what = NULL;
    if (json_object_size(rec) != 4)
        what = "receipt record: must have exactly type, seq, fingerprint, receipt";
    else if (!json_is_integer(seq))
        what = "receipt record: seq must be an integer";
    else if (!json_is_string(fp))
        what = "receipt record: fingerprint must be a string";
    else if (!json_is_object(receipt))
        what = "receipt record: receipt must be an object";
    if (what != NULL) {
        hc_report_issue(j->v->report, HC_SLOT_LINE, "journal_line", subject, "%s", what);
        return 0;
    }

    struct hc_record r = {
        .line = j->line, .seq = json_integer_value(seq), .prev_seq = j->prev_seq, .raw = raw};
    r.fingerprint = hc_str_of(fp);
    j->prev_seq = r.seq;

    const json_t *bid = json_object_get(receipt, "batch_id");
    if (json_is_string(bid)) {
        if (j->batches == NULL && (j->batches = calloc(1, sizeof *j->batches)) == NULL)
            return hc_err_set(err, -ENOMEM, "out of memory");
        long dup =
            hc_batch_set_add(j->batches, json_string_value(bid), json_string_length(bid), j->line);
        if (dup < 0)
            return hc_err_set(err, -ENOMEM, "out of memory");
        r.duplicate_of_line = dup;
    }
    struct hc_epoch *against = hc_receipt_epoch(j, receipt, &r);
    int rc = hc_verify_receipt(j->v, receipt, against, &r, subject, err);
    /* its totals count under the epoch it is judged against: the latest record before it with
     * the id it names (docs/journal.md §7), a legacy record's epoch_seq its position */
    const struct hc_epoch *e = r.named ? r.named : r.in_force;
    int64_t epoch_seq = e == NULL ? 0 : e->chain.legacy ? e->chain.position : e->chain.epoch_seq;
    if (rc == 0 && hc_seg_receipt(j, receipt, epoch_seq) != 0)
        rc = hc_err_set(err, -ENOMEM, "out of memory");
    return rc;
}

/* Verifies one complete line (without its newline, at file offset at), parsed already. */
static int hc_journal_line(struct hc_journal *j, struct hc_line *l, uint64_t at, struct hc_err *err)
{
    char subject[96];
    hc_seg_where(j, subject, sizeof subject);
    json_t *rec = l->doc;
    if (rec == NULL) {
        hc_report_issue(j->v->report, HC_SLOT_LINE, "journal_line", subject,
                        "not JSON: %s (column %d)", l->err.text, l->err.column);
        return 0;
    }
    int rc = hc_seg_line(j, rec, l->p, l->n, at, err);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    struct hc_str raw = {l->p, l->n};
    const char *type = json_string_value(json_object_get(rec, "type"));
    if (type != NULL && strcmp(type, "epoch") == 0)
        rc = hc_journal_epoch(j, rec, raw, err);
    else if (type != NULL && strcmp(type, "receipt") == 0)
        rc = hc_journal_receipt(j, rec, raw, err);
    else
        hc_report_issue(j->v->report, HC_SLOT_LINE, "journal_line", subject,
                        "type: must be \"epoch\" or \"receipt\"");
    return rc;
}

/* Splits buf[0..len) into its n complete lines; a checked line's record (without the crc32
 * member, docs/journal.md §2.1) is copied to j->records for the parser. */
static int hc_journal_split(struct hc_journal *j, const char *buf, size_t len, size_t n)
{
    if (len > j->records_cap) {
        char *grown = realloc(j->records, len);
        if (grown == NULL)
            return -ENOMEM;
        j->records = grown;
        j->records_cap = len;
    }
    size_t start = 0, used = 0;
    for (size_t i = 0; i < n; i++) {
        struct hc_line *l = &j->lines[i];
        const char *nl = memchr(buf + start, '\n', len - start);
        l->raw = l->p = buf + start;
        l->raw_n = l->n = (size_t)(nl - (buf + start));
        l->crc = hc_line_crc(l->raw, l->raw_n);
        if (l->crc == HC_CRC_OK) {
            l->n = l->raw_n - HC_CRC_TAIL + 1;
            memcpy(j->records + used, l->raw, l->n - 1);
            j->records[used + l->n - 1] = '}';
            l->p = j->records + used;
            used += l->n;
        }
        start += l->raw_n + 1;
    }
    return 0;
}

/* Whether the line's checksum lets it be read: a file's lines all carry one, or none does, as
 * its first line; a carried one matches. Reports the line otherwise. */
static int hc_journal_crc_ok(struct hc_journal *j, const struct hc_line *l)
{
    char subject[96];
    if (j->line == 1)
        j->crc_form = l->crc == HC_CRC_NONE ? HC_CRC_NONE : HC_CRC_OK;
    const char *what = l->crc == HC_CRC_BAD ? "crc32: checksum mismatch: the line's crc32 is not "
                                              "that of its bytes"
                       : l->crc == j->crc_form ? NULL
                       : l->crc == HC_CRC_NONE
                           ? "crc32: none, while the file's first line carries one"
                           : "crc32: a checksum, while the file's first line carries none";
    if (what == NULL)
        return 1;
    hc_seg_where(j, subject, sizeof subject);
    hc_report_issue(j->v->report, HC_SLOT_LINE, "journal_line", subject, "%s", what);
    return 0;
}

/* Parses the complete lines in buf[0..len) together, then verifies them in order. Returns the
 * bytes consumed via *used; 0 or a negative code with err filled. */
int hc_journal_lines(struct hc_journal *j, const char *buf, size_t len, size_t *used,
                     struct hc_err *err)
{
    size_t n = 0, start = 0;
    const char *nl;
    while ((nl = memchr(buf + start, '\n', len - start)) != NULL) {
        n++;
        start = (size_t)(nl - buf) + 1;
    }
    *used = start;
    if (n == 0)
        return 0;
    if (n > j->cap_lines) {
        struct hc_line *grown = realloc(j->lines, n * sizeof *grown);
        if (grown == NULL)
            return hc_err_set(err, -ENOMEM, "out of memory");
        j->lines = grown;
        j->cap_lines = n;
    }
    if (hc_journal_split(j, buf, len, n) != 0)
        return hc_err_set(err, -ENOMEM, "out of memory");
    hc_parse_lines(&j->parser, j->lines, n);
    int rc = 0;
    uint64_t base = (uint64_t)j->offset;
    for (size_t i = 0; i < n; i++) {
        j->line++;
        uint64_t at = base + (uint64_t)(j->lines[i].raw - buf);
        if (rc == 0 && hc_journal_crc_ok(j, &j->lines[i]))
            rc = hc_journal_line(j, &j->lines[i], at, err);
        if (rc == 0)
            rc = hc_seg_line_end(j, at + j->lines[i].raw_n + 1, err);
    }
    hc_parse_release(&j->parser, j->lines, n);
    return rc;
}

void hc_journal_reread(struct hc_journal *j)
{
    j->reread = 1;
}

void hc_journal_set_own(struct hc_journal *j, const struct hc_epoch *own)
{
    j->own = own;
    if (j->used_own)
        j->reread = 1;
}

int hc_journal_buffer(struct hc_journal *j, const char *buf, size_t len,
                      const struct hc_row_name *rows, struct hc_err *err)
{
    hc_journal_forget(j);
    j->reread = 0;
    j->rows = rows;
    size_t used = 0;
    int rc = hc_journal_lines(j, buf, len, &used, err);
    j->rows = NULL;
    j->offset = (off_t)used;
    j->pending = len - used;
    if (rc != 0)
        j->reread = 1;
    return rc;
}

void hc_journal_finish(struct hc_journal *j)
{
    hc_seg_finish(j);
}
