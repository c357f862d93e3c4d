/* The files beside journal.jsonl: segments, archive.jsonl, checkpoints. */
/* docs/operations.md §1.6: sealed segments, archive.jsonl's
 * archived ones, checkpoints; and reading a segment's bytes. */
#ifndef HC_STATE_DIR_H
#define HC_STATE_DIR_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "report.h"

struct hc_seg_file {
    char name[48];      /* journal-<F>.jsonl */
    uint64_t first_seq; /* from the name */
    int present;        /* the file is in the state dir */
    int archived;       /* listed in archive.jsonl (the fields below are its entry) */
    int skipped;        /* archived and not read (no --archive-dir, or unreadable there) */
    uint64_t last_seq, bytes;
    char sha256[65];
    char archived_as[64];
};

struct hc_state_dir {
    char dir[PATH_MAX];
    struct hc_seg_file *segs; /* sealed, present or archived, in first_seq order */
    size_t n_segs;
    char (*checkpoints)[48]; /* checkpoint-<L>.json names, in name order */
    size_t n_checkpoints;
};

/* Lists the state dir of journal_path. A name that looks like a segment or a checkpoint but
 * does not parse, and a bad archive.jsonl line, are issues into rep (slot). Returns 0, or a
 * negative code with err filled (-ENOMEM, or the dir cannot be read). */
int hc_state_dir_list(const char *journal_path, struct hc_state_dir *sd, struct hc_report *rep,
                      int slot, struct hc_err *err);
void hc_state_dir_free(struct hc_state_dir *sd);

/* Reads a whole file of the state dir, or an archived segment from archive_dir (decompressed
 * when its name ends in .zst, at most max bytes). *buf is malloc'd. Returns 0, -ENOMEM, or
 * another negative code with err filled (cannot read, bad zstd data, too long). */
int hc_state_dir_read(const char *dir, const char *name, size_t max, char **buf, size_t *len,
                      struct hc_err *err);

#endif
