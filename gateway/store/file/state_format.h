/* The state dir's format marker, <state-dir>/format (docs/journal.md §1.1): which layout the
 * files of the state dir are in, so that a shardgate never serves a state dir written by a newer
 * one as if it knew it. */
#ifndef SHARDGATE_GW_STATE_FORMAT_H
#define SHARDGATE_GW_STATE_FORMAT_H

#include "error.h"

#define GW_STATE_FORMAT_FILE "format"
/* The format this shardgate writes and reads (with every layout before the marker). */
#define GW_STATE_FORMAT 1

/* Checks the marker of the state dir `dir` (open as `dir_fd`, locked). Absent: the dir is new or
 * from before the marker, which this format reads: with `write` the marker is written (synced),
 * else nothing changes. Returns 0; -EINVAL when the marker names a newer format or does not read
 * (err names the file); -errno when it cannot be read or written. */
int gw_state_format_check(int dir_fd, const char *dir, int write, struct gw_error *err);

#endif
