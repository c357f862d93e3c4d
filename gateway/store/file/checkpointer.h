/* The checkpoint thread (docs/journal.md §7): the journal writer hands it a snapshot taken
 * between groups; it makes the idempotency index durable through the snapshot's last seq, then
 * writes the checkpoint, off the request path. */
#ifndef SHARDGATE_GW_CHECKPOINTER_H
#define SHARDGATE_GW_CHECKPOINTER_H

#include <pthread.h>
#include <stdint.h>

#include "checkpoint.h"
#include "idempotency.h"
#include "worker.h"

#define GW_CHECKPOINT_INTERVAL_DEFAULT_MS 10000

struct gw_checkpointer {
    struct gw_journal *journal;
    struct gw_ledger *ledger;
    struct gw_idem *idem;
    uint64_t interval_ms;
    uint64_t taken_seq;      /* last_seq of the newest snapshot taken (the writer's) */
    uint64_t taken_ns;       /* when it was taken */
    uint64_t taken_size;     /* the active segment's size then */
    uint64_t bytes_every;    /* a snapshot once the segment grew by this much (a quarter) */
    struct gw_worker worker; /* its lock guards pending, has_pending and busy */
    struct gw_checkpoint_snapshot pending;
    int has_pending, busy;
};

/* Starts the thread. `taken_seq`: the last_seq of the checkpoint the start used (0: none).
 * Returns 0 or a negative code with err->msg. */
int gw_checkpointer_start(struct gw_checkpointer *c, struct gw_journal *j, struct gw_ledger *l,
                          struct gw_idem *idem, uint64_t interval_ms, uint64_t taken_seq,
                          struct gw_error *err);

/* From the journal writer, between groups: takes a snapshot when the interval has passed or the
 * active segment grew by a quarter of --segment-bytes since the last one (force 0), or at once (1:
 * the shutdown), only when a receipt was committed since the last one; 2 (a rotation) takes one in
 * any case. A newer snapshot replaces one not yet written. */
void gw_checkpointer_offer(struct gw_checkpointer *c, int force);

/* Milliseconds until the interval is due (the writer's wait), at least 1. */
uint64_t gw_checkpointer_due_ms(struct gw_checkpointer *c);

/* Writes what is pending, then stops the thread. */
void gw_checkpointer_stop(struct gw_checkpointer *c);

#endif
