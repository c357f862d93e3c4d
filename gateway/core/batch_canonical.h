/* The fast way in for a batch sent in its canonical form (docs/journal.md §3.1). */
#ifndef SHARDGATE_GW_BATCH_CANONICAL_H
#define SHARDGATE_GW_BATCH_CANONICAL_H

#include "batch.h"

/* Reads `data` when it is exactly a canonical batch of 1..max_changes changes whose strings need
 * no escape: fills out (ids and keys in a copy out->doc owns, the fingerprint the SHA-256 of
 * the body) and returns 1. Returns 0 with out zeroed for any other body, which the strict reader
 * must then read; -ENOMEM. Duplicate ids and the total size are the caller's to check. */
int gw_batch_read_canonical(const char *data, size_t len, size_t max_changes, struct gw_batch *out);

#endif
