/* Re-inserting the batch ids a checkpoint covers into the idempotency index (docs/journal.md
 * §7), fast: from the fixed prefix of each receipt record, no JSON tree. */
#ifndef SHARDGATE_GW_JOURNAL_IDS_H
#define SHARDGATE_GW_JOURNAL_IDS_H

#include "idempotency.h"
#include "journal.h"

/* Inserts the id of every receipt record with seq > after_seq that lies before (end_segment,
 * end_offset). Returns 0, -EINVAL (a record that does not read, or an id twice: err says
 * where), -ENOMEM, -errno. */
int gw_journal_scan_ids(struct gw_journal *j, struct gw_idem *idem, uint64_t after_seq,
                        uint64_t end_segment, uint64_t end_offset, struct gw_error *err);

/* The ids file of an archived segment (docs/journal.md §8), `archived-<first_seq, 20
 * digits>.ids` in the state dir: the data that keeps an archived batch id known when the index
 * (derived) is rebuilt. */
#define GW_ARCHIVED_IDS_NAME_MAX 48
void gw_archived_ids_name(char out[GW_ARCHIVED_IDS_NAME_MAX], uint64_t first_seq);

/* Lays out the ids file of a sealed segment's bytes in `out`: each receipt record with its
 * receipt reduced to {"batch_id":...}, then a seal line over those lines with the segment's
 * last_seq. Returns 0, -EINVAL (a record that does not read: err says where), -ENOMEM. */
int gw_archived_ids_build(const char *data, size_t len, const char *path, uint64_t last_seq,
                          struct gw_buf *out, struct gw_error *err);

/* Writes <dir>/archived-<first_seq>.ids whole and durable (a temp file, fdatasync, rename,
 * fsync of the dir). Returns 0 or -errno with err set. */
int gw_archived_ids_write(const char *dir, uint64_t first_seq, const struct gw_buf *bytes,
                          struct gw_error *err);

/* 1 when <dir>/archived-<F>.ids of archived segment `a` is present and checks out (its seal
 * over its bytes, a's last_seq), else 0. */
int gw_archived_ids_ok(const char *dir, const struct gw_segment *a);

#endif
