/* The background scrub (docs/journal.md §2.1): re-reads the journal's durable lines at a bounded
 * rate and checks each line's crc32 and each sealed segment's sha256, so that a changed byte in
 * old history is found before a reader meets it. */
#ifndef SHARDGATE_GW_SCRUB_H
#define SHARDGATE_GW_SCRUB_H

#include <stdint.h>

#include "metrics.h"
#include "worker.h"

#define GW_SCRUB_RATE_DEFAULT 8388608ull /* bytes a second */
#define GW_SCRUB_PAUSE_S 60              /* between two passes */

struct gw_scrub {
    char *dir;
    uint64_t rate;         /* bytes a second */
    uint64_t checked_from; /* segments from this first_seq on carry line checksums */
    struct gw_metrics *metrics;
    struct gw_worker worker;             /* its lock guards the durable point */
    uint64_t active_first, active_bytes; /* the active segment's durable bytes */
};

/* Starts the scrub thread over the segments of `dir` at `rate` bytes a second (0: no scrub, and
 * nothing started). Damage found is counted in m->record_damage and logged
 * (`record_checksum_failed`, "by":"scrub"); each pass in the scrub series of m. Returns 0 or
 * -errno. */
int gw_scrub_start(struct gw_scrub *sc, const char *dir, uint64_t rate, uint64_t checked_from,
                   struct gw_metrics *m);

/* The journal writer: the active segment and its bytes of whole, synced lines. */
void gw_scrub_durable(struct gw_scrub *sc, uint64_t active_first, uint64_t bytes);

/* Stops the thread (it ends its current read) and frees what start took. */
void gw_scrub_stop(struct gw_scrub *sc);

#endif
