/* Checkpoints (docs/journal.md §7): `checkpoint-<last_seq>.json` in the state dir, one compact
 * line whose sha256 covers it, written atomically; the newest two are kept. A restart starts
 * from the newest valid one and replays only the records after it. */
#ifndef SHARDGATE_GW_CHECKPOINT_H
#define SHARDGATE_GW_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "chain.h"
#include "error.h"
#include "journal.h"
#include "ledger.h"

#define GW_CHECKPOINT_NAME_MAX 48 /* "checkpoint-" 20 digits ".json" and a NUL */
#define GW_CHECKPOINT_TMP "checkpoint.tmp"
#define GW_CHECKPOINT_KEEP 2

/* What a checkpoint covers, taken by the journal writer between two groups. */
struct gw_checkpoint_snapshot {
    uint64_t last_seq, segment, offset;
    struct gw_buf body; /* `"epochs":[...],"ledger":[...],"totals":[...]` */
};

/* A checkpoint read back, checked against its sha256. */
struct gw_checkpoint {
    uint64_t last_seq, segment, offset, index_seq;
    /* where a start from it replays: just after the receipt with last_seq (or the segment's
     * start), before the resume_epochs epoch records that lie between it and `offset` */
    uint64_t resume_offset;
    size_t resume_epochs;
    struct gw_epoch_entry *epochs;
    size_t epoch_count;
    void *json; /* the parsed line (json_t), for the ledger and totals */
};

void gw_checkpoint_name(char out[GW_CHECKPOINT_NAME_MAX], uint64_t last_seq);

/* Takes a snapshot of the journal's position and chain and of the ledger (one consistent copy:
 * call from the writer, between groups). Returns 0 or -ENOMEM. */
int gw_checkpoint_take(struct gw_journal *j, struct gw_ledger *l,
                       struct gw_checkpoint_snapshot *out);
void gw_checkpoint_snapshot_free(struct gw_checkpoint_snapshot *s);

/* Writes `checkpoint-<L>.json` atomically (checkpoint.tmp, fdatasync, rename, fsync of the dir)
 * with index_seq `index_seq`, then unlinks all but the newest two. Returns 0 or -errno with
 * err->msg. */
int gw_checkpoint_write(const char *dir, const struct gw_checkpoint_snapshot *s, uint64_t index_seq,
                        struct gw_error *err);

/* The last_seq of every checkpoint file in `dir`, newest first (*out: free() it). Returns the
 * count, or -ENOMEM / -errno. */
long gw_checkpoint_list(const char *dir, uint64_t **out);

/* Reads and checks checkpoint-<last_seq>.json: sha256, JSON, keys, and its position against the
 * journal's segments. Returns 0, or -EINVAL with err->msg the reason, -ESTALE when it lies
 * inside an archived segment (older than the archive: not usable, not damaged), -ENOMEM. */
int gw_checkpoint_load(const char *dir, uint64_t last_seq, struct gw_journal *j,
                       struct gw_checkpoint *out, struct gw_error *err);
void gw_checkpoint_free(struct gw_checkpoint *c);

/* Puts a loaded checkpoint into an empty journal chain and ledger: epochs, last_seq, every
 * shard's totals and the per-epoch totals. Returns 0, -EINVAL (bad values), -ENOMEM. */
int gw_checkpoint_apply(const struct gw_checkpoint *c, struct gw_journal *j, struct gw_ledger *l,
                        struct gw_error *err);

#endif
