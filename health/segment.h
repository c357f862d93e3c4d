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

#endif
