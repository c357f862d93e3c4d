/* Group commit: one writer thread turns every pending receipt into one write + fdatasync, so
 * concurrent requests share the cost of a sync and no request thread ever blocks on the disk. */
#ifndef SHARDGATE_GW_COMMIT_H
#define SHARDGATE_GW_COMMIT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "checkpointer.h"
#include "commit_item.h"
#include "error.h"
#include "gather.h"
#include "journal.h"
#include "metrics.h"
#include "worker.h"

struct gw_committer {
    struct gw_journal *journal;
    struct gw_commit_hook hook; /* durable NULL: none */
    struct gw_metrics *metrics;
    struct gw_checkpointer *checkpointer; /* NULL: no checkpoints */
    unsigned delay_ms; /* test only: sleep before each group (SHARDGATE_TEST_COMMIT_DELAY_MS) */
    struct gw_worker worker; /* the writer; its lock guards head, tail and stopping */
    struct gw_commit_item *head, *tail;
    atomic_int failed;      /* set for good after the first write or sync failure */
    struct gw_error error;  /* what failed (written once, before `failed` is set) */
    struct gw_gather group; /* the group's bytes: its receipts where their requests wrote them */
    size_t epoch_at, epoch_len; /* the group's last epoch record line in `group.own` (0: none) */
};

/* Starts the writer for `journal`; it rotates segments and offers the checkpointer (may be
 * NULL) a snapshot between groups; `hook` (may be NULL) is told after each durable group.
 * Returns 0 or a negative code with err->msg. */
int gw_committer_start(struct gw_committer *c, struct gw_journal *journal,
                       struct gw_metrics *metrics, struct gw_checkpointer *checkpointer,
                       unsigned delay_ms, const struct gw_commit_hook *hook, struct gw_error *err);

/* Queues an item; its `done` runs on the writer thread (at once with -EIO when the journal has
 * failed or the writer is stopping). */
void gw_committer_submit(struct gw_committer *c, struct gw_commit_item *item);

/* 1 once a write or sync failed: the journal takes no more records. */
int gw_committer_failed(struct gw_committer *c);

/* Writes everything still queued, then stops the writer thread. The lock stays valid: later
 * submits are refused with -EIO at once, so a request racing the shutdown is safe. */
void gw_committer_stop(struct gw_committer *c);

/* Stops the writer if needed and frees the lock, condition and buffer. Call only once nothing
 * can submit any more (the HTTP daemon stopped). */
void gw_committer_destroy(struct gw_committer *c);

#endif
