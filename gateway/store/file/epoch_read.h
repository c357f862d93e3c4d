/* One epoch record read back from a state dir's segments (docs/journal.md §2, §6), for what is
 * derived from two records on demand (docs/decisions.md §61). */
#ifndef SHARDGATE_GW_EPOCH_READ_H
#define SHARDGATE_GW_EPOCH_READ_H

#include "buf.h"
#include "chain.h"
#include "error.h"

/* Appends to `out` the epoch record of chain entry `e` without its crc32 member (the record as
 * the feeds serve it): from the segment that holds the receipt with seq e->first_seq, or the
 * active one when there is none yet, which holds the record or its repeat after the header;
 * segments before it are read when it does not. Each line read is checked first. Returns 0;
 * -ENOENT when no segment present holds it (archived); -EBADMSG with err->msg when a line that
 * could be it fails its check; -ENOMEM; -errno of the directory. */
int gw_file_epoch_record(const char *dir, const struct gw_epoch_entry *e, struct gw_buf *out,
                         struct gw_error *err);

#endif
