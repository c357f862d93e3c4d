/* The upgrade of an index written by the earlier, hand-written version (docs/journal.md §9.1):
 * its manifest.json and runs, read once and stored in the database, then removed. */
#ifndef SHARDGATE_GW_IDEM_CONVERT_H
#define SHARDGATE_GW_IDEM_CONVERT_H

#include <stdint.h>

#include "idem_db.h"

/* 1 when `dir` holds manifest.json or a run of the earlier version. */
int gw_idem_convert_present(const char *dir);

/* Checks the manifest and every run it lists (their checksums, block by block) and stores
 * every record in `db`. Returns NULL with *durable_seq (the manifest's) and *ids, or why the
 * files are unusable (some records may be stored: each is an acknowledged id's true entry). */
const char *gw_idem_convert(const char *dir, struct gw_idem_db *db, uint64_t *durable_seq,
                            uint64_t *ids);

/* Removes manifest.json and the runs. */
void gw_idem_convert_remove(const char *dir);

#endif
