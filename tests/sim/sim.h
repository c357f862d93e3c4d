/* The simulator's world (docs/operations.md §5.6): its operations, the model of every batch
 * sent, and one run of the store; what sim_world.c (the store and its client), sim_oracle.c (the
 * checks) and sim_ops.c (the operations) share with the driver, sim.c. */
#ifndef SHARDGATE_SIM_H
#define SHARDGATE_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "shard.h"
#include "store.h"
#include "view.h"

#define SEGMENT_BYTES 6000
#define CHECKPOINT_MS 1000
#define MAX_BATCHES 4096
#define MAX_SHARDS 8

/* The operations, each a letter in a history and an argument that decides its details. */
enum op_kind {
    OP_SUBMIT = 'n',  /* a new batch; racing a second claim of its id when the arg says */
    OP_RETRY = 'r',   /* a batch already sent, sent again alike */
    OP_REUSE = 'u',   /* a batch id already sent, with another batch */
    OP_EPOCH = 'm',   /* a membership change: the shards file, then its epoch record */
    OP_TICK = 't',    /* time passes: checkpoints by time */
    OP_RESTART = 's', /* a clean stop and start */
    OP_CRASH = 'c',   /* a crash at one of the next system calls, then a start */
    OP_FAULT = 'f',   /* EIO, ENOSPC, a short write or a failed sync, then a start if it failed */
    OP_ARCHIVE = 'a', /* stop, `shardgate journal archive`, start */
    OP_DROP_INDEX = 'i', /* stop, index/ removed (docs/operations.md §5.2), start */
    OP_CUT =
        'k', /* stop, the journal cut before its last receipts (docs/operations.md §5.2), start */
    OP_FLIP = 'x', /* a bit flipped in a durable sector, then a start */
};

struct op {
    char kind;
    uint32_t arg;
};

/* MAYBE: answered as failed: absent or whole; CUT: its line cut by the operator: absent, and
 * new when sent again */
enum batch_state { ACKED = 1, MAYBE, CUT };

struct batch {
    char id[24];
    int variant;
    enum batch_state state;
    struct gw_buf receipt;
    char shard[MAX_SHARDS][GW_SHARD_ID_MAX + 1];
    uint64_t load[MAX_SHARDS];
    size_t shards;
};

struct run {
    uint64_t seed;
    char base[64], state[96], archive[96], conf[96], shards[96];
    struct gw_store *store;
    struct gw_store_options o;
    struct gw_metrics metrics;
    struct gw_view_slot views;
    struct gw_view *view;
    struct batch *batches;
    size_t nbatches;
    int membership;     /* which of the shards files is in force */
    int archived;       /* an archive ran: reads may answer archived */
    int flipped;        /* a bit was flipped: reads may answer damaged, a start may refuse */
    int stop_history;   /* a start refused after a flip: the history ends there */
    const char *legacy; /* the journal a legacy history starts from, or NULL */
    char base_ids[MAX_SHARDS * 4][GW_SHARD_ID_MAX + 1]; /* a legacy history: the totals it */
    uint64_t base_load[MAX_SHARDS * 4];                 /* started with, by shard */
    size_t nbase;
    char failure[1024];
    uint64_t ops_run;
};

/* The three memberships a history moves between. */
extern const char *const sim_memberships[3];

/* Records the run's first failure (printf-style); returns -1. */
int sim_failed(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes `text` to `path` (outside the simulated disk's faults), or exits 2. */
void sim_write_plain(const char *path, const char *text);

/* A start of the store on the run's state dir: 0, or -1 (a failure, or a refusal after a flip,
 * which ends the history). */
int sim_store_open(struct run *r);

/* A clean stop; nothing when stopped. */
void sim_store_close(struct run *r);

/* The model's batch `id`, or NULL. */
struct batch *sim_find_batch(struct run *r, const char *id);

/* Sends batch `id` in `variant` as a client would (a second claim racing it when `race`) and
 * checks the verdict against the model. Returns 0 or -1. */
int sim_send_batch(struct run *r, const char *id, int variant, int race);

/* Every check of the model against the store (docs/operations.md §5.6, the oracle). */
int sim_check_all(struct run *r);

/* A start, then every check. */
int sim_start_and_check(struct run *r);

/* A clean stop, then a start and every check. */
int sim_restart(struct run *r);

/* The first start of a legacy history: its batches and totals join the model. */
int sim_adopt_legacy(struct run *r);

/* Runs one operation of a history. */
int sim_run_op(struct run *r, const struct op *op);

#endif
