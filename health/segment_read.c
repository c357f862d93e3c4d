/* Reads the sealed and archived segments before the active journal.jsonl. */
/* Checkpoints first, then every sealed or archived segment in first_seq order through the
 * journal reader (docs/operations.md §1.6). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "segment.h"

#define HC_SEG_MAX ((size_t)1 << 40) /* --segment-bytes at most 2^40 (a group may exceed it) */

/* Starts reading a file with first_seq first: its name must continue the chain. */
static void hc_seg_begin(struct hc_journal *j, const char *name, uint64_t first, const char *buf)
{
    struct hc_seg *s = j->seg;
    snprintf(s->file, sizeof s->file, "%s", name);
    s->file_first = first;
    s->file_first_segment = first == 1;
    s->file_buf = buf;
    s->seal_seen = 0;
    j->line = 0;
    j->offset = 0;
    if (first != s->expect_first) {
        j->v->report->checks++;
        hc_report_issue(j->v->report, HC_SLOT_SEGMENT, "journal_segment", name,
                        "first_seq %" PRIu64 " != %" PRIu64
                        " (1 + the previous segment's last_seq): a segment is missing, "
                        "swapped or out of order",
                        first, s->expect_first);
    }
    s->expect_first = first;
}

/* Verifies a sealed segment's bytes: every line, then that it ended with its seal line. */
static int hc_seg_sealed(struct hc_journal *j, const char *name, uint64_t first, const char *buf,
                         size_t len, struct hc_err *err)
{
    hc_seg_begin(j, name, first, buf);
    size_t used = 0;
    int rc = hc_journal_lines(j, buf, len, &used, err);
    if (rc != 0)
        return rc;
    if (used != len)
        hc_report_issue(j->v->report, HC_SLOT_SEGMENT, "journal_segment", name,
                        "ends without a newline (%zu bytes after the last line): truncated",
                        len - used);
    else if (!j->seg->seal_seen)
        hc_report_issue(j->v->report, HC_SLOT_SEGMENT, "journal_segment", name,
                        "no seal line at its end: truncated");
    j->seg->file_buf = NULL;
    return 0;
}

/* An archived segment not read: an issue unless accepted; the chain resumes after it. */
static void hc_seg_skip(struct hc_journal *j, struct hc_seg_file *f, int unverified)
{
    f->skipped = 1;
    struct hc_seg *s = j->seg;
    if (unverified && !j->opts.accept_archived)
        hc_report_issue(j->v->report, HC_SLOT_ARCHIVE, "journal_archived_unverified", f->name,
                        "archived as %s (seq %" PRIu64 "..%" PRIu64
                        "), not verified: give --archive-dir (or --accept-archived)",
                        f->archived_as, f->first_seq, f->last_seq);
    if (f->first_seq != s->expect_first)
        hc_report_issue(j->v->report, HC_SLOT_SEGMENT, "journal_segment", f->name,
                        "first_seq %" PRIu64 " != %" PRIu64 " (1 + the previous segment's "
                        "last_seq): a segment is missing, swapped or out of order",
                        f->first_seq, s->expect_first);
    s->expect_first = f->last_seq + 1;
    s->prev_sha[0] = '\0';
    s->sums = 0;
    s->seeding = 1;
    j->prev_seq = (int64_t)f->last_seq;
}

/* An archived segment read from --archive-dir: its whole bytes against archive.jsonl. */
static int hc_seg_archived(struct hc_journal *j, struct hc_seg_file *f, struct hc_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    struct hc_err why;
    unsigned char md[HC_DIGEST_MAX];
    char hex[65] = "";
    int rc = hc_state_dir_read(j->opts.archive_dir, f->archived_as, f->bytes, &buf, &len, &why);
    if (rc == -ENOMEM)
        return hc_err_set(err, rc, "out of memory");
    if (rc == 0 && hc_digest_once(j->seg->sha256, buf, len, md) != 0)
        rc = hc_err_set(err, -EIO, "digest failed");
    if (rc == -EIO && buf != NULL) {
        free(buf);
        return rc;
    }
    if (rc == 0)
        hc_hex(md, 32, hex);
    if (rc != 0 || len != f->bytes || strcmp(hex, f->sha256) != 0) {
        if (rc != 0)
            hc_report_issue(j->v->report, HC_SLOT_ARCHIVE, "journal_archive", f->archived_as, "%s",
                            why.msg);
        else
            hc_report_issue(j->v->report, HC_SLOT_ARCHIVE, "journal_archive", f->archived_as,
                            "not the archived bytes (%zu bytes, sha256 %s; archive.jsonl says "
                            "%" PRIu64 ", %s)",
                            len, hex, f->bytes, f->sha256);
        free(buf);
        hc_seg_skip(j, f, 0);
        return 0;
    }
    rc = hc_seg_sealed(j, f->name, f->first_seq, buf, len, err);
    free(buf);
    return rc;
}

/* A sealed segment present in the state dir. */
static int hc_seg_present(struct hc_journal *j, const struct hc_seg_file *f, struct hc_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    struct hc_err why;
    int rc = hc_state_dir_read(j->seg->sd.dir, f->name, HC_SEG_MAX, &buf, &len, &why);
    if (rc == -ENOMEM)
        return hc_err_set(err, rc, "out of memory");
    if (rc != 0) {
        hc_report_issue(j->v->report, HC_SLOT_SEGMENT, "journal_segment", f->name, "%s", why.msg);
        return 0;
    }
    rc = hc_seg_sealed(j, f->name, f->first_seq, buf, len, err);
    free(buf);
    return rc;
}

/* With --accept-archived, a checkpoint must cover every archived segment (docs/journal.md §8). */
static void hc_seg_covered(struct hc_journal *j)
{
    struct hc_seg *s = j->seg;
    uint64_t need = 0, have = 0;
    const char *last = NULL;
    for (size_t i = 0; i < s->sd.n_segs; i++)
        if (!s->sd.segs[i].present && s->sd.segs[i].archived) {
            need = s->sd.segs[i].last_seq;
            last = s->sd.segs[i].name;
        }
    for (size_t i = 0; i < s->n_ck; i++)
        if (s->ck[i].usable && s->ck[i].last_seq > have)
            have = s->ck[i].last_seq;
    if (last != NULL && j->opts.accept_archived && !j->opts.archive_dir && have < need)
        hc_report_issue(j->v->report, HC_SLOT_ARCHIVE, "journal_archived_uncovered", last,
                        "no valid checkpoint covers seq %" PRIu64 " (the newest is at %" PRIu64
                        "): the archived totals cannot be accepted",
                        need, have);
}

static int hc_seg_checkpoints(struct hc_journal *j, struct hc_err *err)
{
    struct hc_seg *s = j->seg;
    if (s->sd.n_checkpoints == 0)
        return 0;
    s->ck = calloc(s->sd.n_checkpoints, sizeof *s->ck);
    if (s->ck == NULL)
        return hc_err_set(err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < s->sd.n_checkpoints; i++) {
        int rc = hc_ckpt_load(s->sd.dir, s->sd.checkpoints[i], s->sha256, &s->ck[i], j->v->report,
                              HC_SLOT_CHECKPOINT, err);
        s->n_ck = i + 1;
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Reads every sealed segment, present or archived, in first_seq order. */
static int hc_seg_read_sealed(struct hc_journal *j, struct hc_err *err)
{
    struct hc_seg *s = j->seg;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < s->sd.n_segs; i++) {
        struct hc_seg_file *f = &s->sd.segs[i];
        if (f->present)
            rc = hc_seg_present(j, f, err);
        else if (j->opts.archive_dir != NULL)
            rc = hc_seg_archived(j, f, err);
        else
            hc_seg_skip(j, f, 1);
    }
    return rc;
}

int hc_seg_open(struct hc_journal *j, struct hc_err *err)
{
    hc_seg_free(j);
    struct hc_seg *s = calloc(1, sizeof *s);
    if (s == NULL)
        return hc_err_set(err, -ENOMEM, "out of memory");
    j->seg = s;
    s->expect_first = 1;
    s->sums = 1;
    int rc = hc_digest_open("SHA256", &s->sha256, err);
    rc = rc ? rc : hc_state_dir_list(j->path, &s->sd, j->v->report, HC_SLOT_SEGMENT, err);
    if (rc != 0)
        return rc == -ENOMEM ? rc : hc_err_set(err, -EIO, "%s", err->msg);
    s->multi = s->sd.n_segs > 0;
    rc = hc_seg_checkpoints(j, err);
    rc = rc ? rc : hc_seg_read_sealed(j, err);
    if (rc != 0)
        return rc;
    hc_seg_covered(j);
    hc_seg_begin(j, "journal.jsonl", s->expect_first, NULL);
    s->file_first_segment = s->sd.n_segs == 0;
    return 0;
}
