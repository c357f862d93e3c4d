/* The contract and shards files health reads itself, and whether they changed since. */
#ifndef HC_FILES_H
#define HC_FILES_H

#include <sys/types.h>
#include <time.h>

#include "error.h"
#include "verify.h"

/* What tells one version of a file from the next (docs/operations.md §1.4): inode, size and
 * modification time. An atomic replace (rename) changes the inode, an edit the size or mtime. */
struct hc_file_id {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
};

struct hc_files {
    const char *conf, *shards;
    struct hc_file_id conf_id, shards_id; /* of the versions last loaded */
    int loaded;
};

/* Reads both files into ep (zeroed; a usable epoch on success) and remembers which versions
 * they were. A file that changes while it is read is refused (-EAGAIN: read it again later).
 * Returns 0, or a negative code with err->msg = the start message ("contract: FILE:LINE: what",
 * "shards: FILE: PATH: what"); -ENOMEM when out of memory. */
int hc_files_load(struct hc_files *f, struct hc_epoch *ep, struct hc_err *err);

/* 1 when either file is not the version last loaded (or cannot be stat'ed), else 0. */
int hc_files_changed(const struct hc_files *f);

#endif
