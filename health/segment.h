/* Journal segments: the header, epoch repeat and seal rules across segment files. */
/* docs/operations.md §1.6: the rules of the header, the epoch repeat
 * and the seal line, the chain of segments across files, the sums a checkpoint is compared with,
 * and reading the sealed and archived segments before the active journal.jsonl. The journal
 * reader (journal.c) calls these hooks. */
#ifndef HC_SEGMENT_H
#define HC_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "checkpoint.h"
#include "state_dir.h"
#include "totals.h"

struct hc_journal;
struct hc_epoch;

struct hc_seg {
    struct hc_state_dir sd;
    struct hc_ckpt *ck;
    size_t n_ck;
    struct hc_totals totals;
    struct hc_digest *sha256; /* its own: the verifier's is for fingerprints */
    /* the file being read */
    char file[48];
    uint64_t file_first;
    int file_first_segment; /* journal's first segment: no header */
    const char *file_buf;   /* a sealed segment's bytes; NULL for the active file */
    int seal_seen;
    /* across files */
    int multi; /* more than one segment: subjects name the file */
    uint64_t expect_first;
    char prev_sha[65]; /* the previous seal's sha256; "" none (or archived, not read) */
    char *latest_raw;  /* the chain's latest epoch record, its bytes */
    size_t latest_n;
    int sums;    /* every receipt so far was read: the checkpoints' sums can be compared */
    int seeding; /* an archived part was skipped: the next epoch repeat starts the chain */
};

/* What the reader was told (check/serve options). */
struct hc_seg_options {
    const char *archive_dir; /* NULL: archived segments are not read */
    int accept_archived;
};

/* Lists the state dir, loads the checkpoints and reads every sealed (and archived) segment
 * through the reader, then prepares for the active journal.jsonl. Returns 0 or a negative code
 * with err filled (-ENOMEM, -EIO). */
int hc_seg_open(struct hc_journal *j, struct hc_err *err);
void hc_seg_free(struct hc_journal *j);

/* A line of the current file (starting at file offset at): returns 1 when it was a header,
 * repeat or seal line (judged here), 0 when it is a record for the reader, or a negative code
 * with err filled. */
int hc_seg_line(struct hc_journal *j, const json_t *rec, const char *raw, size_t n, uint64_t at,
                struct hc_err *err);
/* The reader is at file offset end after a line: checkpoints positioned there are compared. */
int hc_seg_line_end(struct hc_journal *j, uint64_t end, struct hc_err *err);
/* An epoch record (raw bytes) entered the chain / a receipt was read. 0 or -ENOMEM. */
int hc_seg_epoch(struct hc_journal *j, const struct hc_epoch *ep, const char *raw, size_t n);
int hc_seg_receipt(struct hc_journal *j, const json_t *receipt, int64_t epoch_seq);
/* The journal was read to its end (check): a checkpoint never reached is an issue. */
void hc_seg_finish(struct hc_journal *j);
/* "line N", or "<file>:N" when the journal has more than one segment. */
void hc_seg_where(const struct hc_journal *j, char *out, size_t cap);

#endif
