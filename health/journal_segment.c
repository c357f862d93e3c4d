/* The segment rules: header, epoch repeat and seal lines, checkpoint positions, the sums. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "journal.h"

#define HC_SEG_ISSUE(j, sub, ...)                                                                  \
    hc_report_issue((j)->v->report, HC_SLOT_SEGMENT, "journal_segment", sub, __VA_ARGS__)

void hc_seg_where(const struct hc_journal *j, char *out, size_t cap)
{
    if (j->rows != NULL && j->line > 0) {
        const struct hc_row_name *r = &j->rows[j->line - 1];
        snprintf(out, cap, "%s %" PRId64,
                 r->epoch ? "shardgate_epochs epoch_seq" : "shardgate_receipts seq", r->key);
        return;
    }
    if (j->seg != NULL && j->seg->multi)
        snprintf(out, cap, "%s:%ld", j->seg->file, j->line);
    else
        snprintf(out, cap, "line %ld", j->line);
}

static void hc_seg_count(struct hc_journal *j)
{
    j->v->report->checks++;
    j->v->report->evals[HC_SLOT_SEGMENT]++;
}

/* SHA-256 of the first n bytes of the current file, as hex. */
static int hc_seg_prefix_sha(struct hc_journal *j, uint64_t n, char hex[65], struct hc_err *err)
{
    struct hc_seg *s = j->seg;
    unsigned char md[HC_DIGEST_MAX];
    if (s->file_buf != NULL) {
        if (hc_digest_once(s->sha256, s->file_buf, n, md) != 0)
            return hc_err_set(err, -EIO, "digest failed");
        hc_hex(md, 32, hex);
        return 0;
    }
    int fd = open(j->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return hc_err_set(err, -EIO, "%s: cannot open", j->path);
    char buf[65536];
    int rc = hc_digest_begin(s->sha256);
    for (uint64_t at = 0; rc == 0 && at < n;) {
        size_t want = n - at < sizeof buf ? (size_t)(n - at) : sizeof buf;
        ssize_t got = pread(fd, buf, want, (off_t)at);
        rc = got > 0 ? hc_digest_update(s->sha256, buf, (size_t)got) : -EIO;
        at += got > 0 ? (uint64_t)got : 0;
    }
    close(fd);
    rc = rc ? rc : hc_digest_end(s->sha256, md);
    if (rc != 0)
        return hc_err_set(err, -EIO, "%s: cannot hash", j->path);
    hc_hex(md, 32, hex);
    return 0;
}

/* The seal line: last_seq, bytes before it, their SHA-256 (docs/journal.md §6). */
static int hc_seg_seal(struct hc_journal *j, const json_t *rec, uint64_t at, struct hc_err *err)
{
    struct hc_seg *s = j->seg;
    char where[96], hex[65];
    hc_seg_where(j, where, sizeof where);
    hc_seg_count(j);
    const json_t *l = json_object_get(rec, "last_seq"), *b = json_object_get(rec, "bytes");
    const char *sha = json_string_value(json_object_get(rec, "sha256"));
    s->seal_seen = 1;
    if (json_object_size(rec) != 4 || !json_is_integer(l) || !json_is_integer(b) || sha == NULL ||
        strlen(sha) != 64) {
        HC_SEG_ISSUE(j, where, "seal: not {\"type\":\"seal\",\"last_seq\",\"bytes\",\"sha256\"}");
        s->prev_sha[0] = '\0';
        return 0;
    }
    int64_t last = json_integer_value(l);
    if (last != j->prev_seq)
        HC_SEG_ISSUE(j, where, "seal: last_seq %" PRId64 " != %" PRId64 " (the last receipt's)",
                     last, j->prev_seq);
    else if ((uint64_t)json_integer_value(b) != at)
        HC_SEG_ISSUE(j, where, "seal: bytes %" PRId64 " != %" PRIu64 " (the bytes before it)",
                     (int64_t)json_integer_value(b), at);
    else {
        int rc = hc_seg_prefix_sha(j, at, hex, err);
        if (rc != 0)
            return rc;
        if (strcmp(hex, sha) != 0)
            HC_SEG_ISSUE(j, where, "seal: sha256 %s != %s (the SHA-256 of the bytes before it)",
                         sha, hex);
    }
    snprintf(s->prev_sha, sizeof s->prev_sha, "%s", sha);
    s->expect_first = (uint64_t)last + 1;
    return 0;
}

/* Line 1 of a later segment: {"type":"segment","first_seq":F,"prev":"<seal sha256>"}. */
static int hc_seg_header(struct hc_journal *j, const json_t *rec, const char *raw, size_t n)
{
    struct hc_seg *s = j->seg;
    char where[96], want[160];
    hc_seg_where(j, where, sizeof where);
    hc_seg_count(j);
    const char *type = json_string_value(json_object_get(rec, "type"));
    if (type == NULL || strcmp(type, "segment") != 0) {
        HC_SEG_ISSUE(j, where, "not a segment header (the first line of a later segment)");
        return 0;
    }
    const json_t *f = json_object_get(rec, "first_seq");
    const char *prev = json_string_value(json_object_get(rec, "prev"));
    int64_t first = json_integer_value(f);
    snprintf(want, sizeof want, "{\"type\":\"segment\",\"first_seq\":%" PRIu64 ",\"prev\":\"%s\"}",
             s->file_first,
             s->prev_sha[0] ? s->prev_sha
             : prev         ? prev
                            : "");
    if (!json_is_integer(f) || (uint64_t)first != s->file_first)
        HC_SEG_ISSUE(j, where,
                     "header: first_seq %" PRId64 " != %" PRIu64
                     " (1 + the previous segment's last_seq): a segment is missing, swapped or "
                     "out of order",
                     first, s->file_first);
    else if (prev == NULL || (s->prev_sha[0] && strcmp(prev, s->prev_sha) != 0))
        HC_SEG_ISSUE(j, where, "header: prev %s != %s (the previous segment's seal sha256)",
                     prev ? prev : "(none)", s->prev_sha);
    else if (strlen(want) != n || memcmp(want, raw, n) != 0)
        HC_SEG_ISSUE(j, where, "header: not the bytes %s", want);
    return 1;
}

/* Line 2 of a later segment: the chain's latest epoch record, byte for byte. */
static int hc_seg_repeat(struct hc_journal *j, const json_t *rec, const char *raw, size_t n)
{
    struct hc_seg *s = j->seg;
    char where[96];
    hc_seg_where(j, where, sizeof where);
    const char *type = json_string_value(json_object_get(rec, "type"));
    if (s->seeding && type != NULL && strcmp(type, "epoch") == 0)
        return 0; /* the archived chain was not read: this record starts ours */
    hc_seg_count(j);
    if (type == NULL || strcmp(type, "epoch") != 0) {
        HC_SEG_ISSUE(j, where, "not the epoch record in force (line 2 of a later segment)");
        return 0;
    }
    if (s->latest_raw == NULL || s->latest_n != n || memcmp(s->latest_raw, raw, n) != 0)
        HC_SEG_ISSUE(j, where,
                     "epoch repeat: not byte-identical to the chain's latest epoch record");
    return 1;
}

int hc_seg_line(struct hc_journal *j, const json_t *rec, const char *raw, size_t n, uint64_t at,
                struct hc_err *err)
{
    struct hc_seg *s = j->seg;
    char where[96];
    if (s == NULL)
        return 0;
    if (s->seal_seen) {
        hc_seg_where(j, where, sizeof where);
        HC_SEG_ISSUE(j, where, "a line after the seal line");
        return 1;
    }
    if (!s->file_first_segment && j->line == 1)
        return hc_seg_header(j, rec, raw, n);
    if (!s->file_first_segment && j->line == 2)
        return hc_seg_repeat(j, rec, raw, n);
    const char *type = json_string_value(json_object_get(rec, "type"));
    if (type != NULL && strcmp(type, "seal") == 0) {
        int rc = hc_seg_seal(j, rec, at, err);
        return rc < 0 ? rc : 1;
    }
    if (type != NULL && strcmp(type, "segment") == 0) {
        hc_seg_where(j, where, sizeof where);
        HC_SEG_ISSUE(j, where, "a segment header not on line 1 of a later segment");
        return 1;
    }
    return 0;
}

int hc_seg_line_end(struct hc_journal *j, uint64_t end, struct hc_err *err)
{
    struct hc_seg *s = j->seg;
    for (size_t i = 0; s != NULL && i < s->n_ck; i++) {
        struct hc_ckpt *c = &s->ck[i];
        if (!c->usable || c->reached || c->segment != s->file_first || c->offset != end)
            continue;
        if (hc_ckpt_compare(c, j->prev_seq, &s->totals, j->epochs, j->n_epochs, s->sums,
                            j->v->report, HC_SLOT_CHECKPOINT) != 0)
            return hc_err_set(err, -ENOMEM, "out of memory");
    }
    return 0;
}

int hc_seg_epoch(struct hc_journal *j, const struct hc_epoch *ep, const char *raw, size_t n)
{
    struct hc_seg *s = j->seg;
    if (s == NULL)
        return 0;
    s->seeding = 0;
    char *copy = malloc(n ? n : 1);
    if (copy == NULL)
        return -ENOMEM;
    memcpy(copy, raw, n);
    free(s->latest_raw);
    s->latest_raw = copy;
    s->latest_n = n;
    return ep->usable ? hc_totals_epoch(&s->totals, &ep->members) : 0;
}

int hc_seg_receipt(struct hc_journal *j, const json_t *receipt, int64_t epoch_seq)
{
    if (j->seg == NULL)
        return 0;
    const char *id;
    json_t *sh;
    json_object_foreach((json_t *)json_object_get(receipt, "shards"), id, sh)
    {
        json_int_t load = json_integer_value(json_object_get(sh, "load"));
        json_int_t received = json_integer_value(json_object_get(sh, "received"));
        if (load < 0 || received < 0)
            continue; /* a schema issue already */
        if (hc_totals_add(&j->seg->totals, epoch_seq, id, strlen(id), (uint64_t)load,
                          (uint64_t)received) != 0)
            return -ENOMEM;
    }
    return 0;
}

/* Whether the checkpoint's position is in an archived segment that was not read. */
static int hc_seg_in_skipped(const struct hc_seg *s, const struct hc_ckpt *c)
{
    for (size_t i = 0; i < s->sd.n_segs; i++)
        if (s->sd.segs[i].skipped && s->sd.segs[i].first_seq == c->segment)
            return 1;
    return 0;
}

void hc_seg_finish(struct hc_journal *j)
{
    struct hc_seg *s = j->seg;
    for (size_t i = 0; s != NULL && i < s->n_ck; i++) {
        struct hc_ckpt *c = &s->ck[i];
        if (c->usable && !c->reached && !hc_seg_in_skipped(s, c))
            hc_report_issue(j->v->report, HC_SLOT_CHECKPOINT, "journal_checkpoint", c->name,
                            "segment/offset: %" PRIu64 "/%" PRIu64
                            " is not the end of a line in the journal",
                            c->segment, c->offset);
    }
}

/* The segment state of a journal read (hc_seg_open), freed; nothing when there is none. */
void hc_seg_free(struct hc_journal *j)
{
    struct hc_seg *s = j->seg;
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n_ck; i++)
        hc_ckpt_free(&s->ck[i]);
    free(s->ck);
    hc_totals_free(&s->totals);
    hc_state_dir_free(&s->sd);
    hc_digest_close(s->sha256);
    free(s->latest_raw);
    free(s);
    j->seg = NULL;
}
