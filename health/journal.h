/* Incremental journal reader: epochs, receipt records, and where it stopped reading. */
#ifndef HC_JOURNAL_H
#define HC_JOURNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "parse.h"
#include "segment.h"
#include "verify.h"

struct hc_batch_set;

/* What a line of a journal rebuilt from a --store database is (docs/operations.md §1.7): a
 * receipt row by its seq, or an epoch row by its epoch_seq. */
struct hc_row_name {
    int epoch; /* 1: shardgate_epochs, 0: shardgate_receipts */
    int64_t key;
};

struct hc_journal {
    const char *path;
    struct hc_verifier *v; /* writes into v->report, which a reset clears */
    const struct hc_epoch *own;
    /* where reading stopped: offset of the first byte not yet consumed, the file's identity,
     * and the bytes just before offset (to notice a file rewritten in place) */
    off_t offset;
    dev_t dev;
    ino_t ino;
    int have_identity;
    unsigned char tail[64];
    size_t tail_len;
    long line; /* lines consumed */
    /* what the lines so far established */
    struct hc_epoch **epochs;
    size_t n_epochs, cap_epochs;
    int64_t prev_seq;
    int used_own; /* a receipt before any epoch record was judged against own */
    struct hc_batch_set *batches;
    unsigned resets; /* times the file was truncated or replaced and re-read from 0 */
    /* set after an error or by hc_journal_reread: the next update forgets everything and reads
     * from 0, so no line past an error is ever taken as verified */
    int reread;
    size_t pending; /* bytes of an unterminated last line after the last update (not judged) */
    /* parsing: the lines of the current read batch and the parser they go through */
    struct hc_line *lines;
    size_t cap_lines;
    char *records; /* the checked lines' records, without their crc32 member */
    size_t records_cap;
    int crc_form; /* enum hc_crc of the current file's first line: all its lines are alike */
    char *buf;    /* the read buffer, kept between calls */
    size_t buf_cap;
    struct hc_parser parser;
    /* the segments, checkpoints and archive beside it (segment.h); set up when reading from 0 */
    struct hc_seg *seg;
    struct hc_seg_options opts;
    /* a journal rebuilt from a database: line i names rows[i - 1] in issues instead of "line i" */
    const struct hc_row_name *rows;
};

/* Prepares a reader; nothing is read yet. own is the service's own contract + shards. */
void hc_journal_init(struct hc_journal *j, const char *path, struct hc_verifier *v,
                     const struct hc_epoch *own);
void hc_journal_free(struct hc_journal *j);

/* journal_follow.c: verifies the complete lines appended since the last call. When the file
 * shrank, was replaced (other inode) or rewritten before the offset, or the last call failed, all
 * state and v->report are reset and it is read from the start. An unterminated last line is
 * never judged nor counted: its length is left in j->pending (it may be a group commit in
 * progress; see docs/operations.md, "The in-progress tail"). Returns 0, or a negative errno-style
 * code with err filled when the journal cannot be read (-ENOENT when it does not exist) or
 * verification failed internally (-ENOMEM, -EIO); after an error the next call re-reads from 0. */
int hc_journal_update(struct hc_journal *j, struct hc_err *err);

/* Verifies buf[0..len) as a whole journal of its own (no state dir, no segments): forgets
 * everything first, as a re-read from 0 does. rows[i] names line i + 1 (NULL: "line N").
 * Returns as hc_journal_update. */
int hc_journal_buffer(struct hc_journal *j, const char *buf, size_t len,
                      const struct hc_row_name *rows, struct hc_err *err);

/* Takes own as the service's contract + shards from now on (serve follows the files); a
 * journal that judged a receipt against the previous one is re-verified at the next update. */
void hc_journal_set_own(struct hc_journal *j, const struct hc_epoch *own);

/* Makes the next update forget everything and re-verify the whole file. */
void hc_journal_reread(struct hc_journal *j);

/* Verifies the complete lines in buf[0..len) of the current file, which start at file offset
 * j->offset; *used is the bytes consumed (up to the last newline). For segment_read.c and
 * journal_follow.c. Returns 0 or a negative code with err filled. */
int hc_journal_lines(struct hc_journal *j, const char *buf, size_t len, size_t *used,
                     struct hc_err *err);

/* Forgets everything read (epochs, seq, batch ids, the segments, the report) so the file is
 * read again from its start. */
void hc_journal_forget(struct hc_journal *j);

/* The journal was read to its end (check): checkpoints never reached are issues. */
void hc_journal_finish(struct hc_journal *j);

/* What the journal read so far says at its end. */
void hc_journal_end_state(const struct hc_journal *j, struct hc_journal_end *end);

/* The journal's segments, checkpoints and archive (segment_read.c, journal_segment.c). */
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
