/* `shardgate journal archive` (docs/journal.md §8): moves the sealed segments the newest valid
 * checkpoint covers out of the state dir, one crash-safe step after another. */
#ifndef SHARDGATE_GW_ARCHIVE_H
#define SHARDGATE_GW_ARCHIVE_H

#include <stddef.h>

#include "error.h"

struct gw_archive_result {
    size_t archived;                /* segments moved by this run */
    size_t completed;               /* listed by an earlier, interrupted run and unlinked now */
    unsigned long long through_seq; /* the bound used: min(last_seq, index_seq), 0: none */
};

/* Takes the state dir's lock (-EBUSY, err `journal: <dir>: in use by another process`).
 * Returns 0, -EINVAL (a fault of the state dir, err names it), -ENOMEM, -errno (I/O). */
int gw_journal_archive(const char *state_dir, const char *archive_dir, int plain,
                       struct gw_archive_result *out, struct gw_error *err);

/* The first step of gw_journal_archive alone: the ids file of every archived segment that lacks
 * a good one written from its copy in `archive_dir`, checked against archive.jsonl's sha256
 * (docs/journal.md §8), so that the state dir verifies before anything more is archived. Returns
 * as gw_journal_archive. */
int gw_journal_archive_ids(const char *state_dir, const char *archive_dir, struct gw_error *err);

#endif
