/* The inside of the idempotency index, shared by its files (idempotency.c: the request path;
 * idem_open.c; idem_flush.c: RAM to runs; idem_merge.c; idem_thread.c). Not for callers. */
#ifndef SHARDGATE_GW_IDEM_STATE_H
#define SHARDGATE_GW_IDEM_STATE_H

#include <pthread.h>
#include <stdatomic.h>

#include "error.h"
#include "idem_rec.h"
#include "idem_run.h"
#include "idem_table.h"
#include "idem_tuning.h"

/* An immutable list of runs, published whole; readers hold a reference while they search. */
struct gw_idem_runset {
    atomic_uint refs;
    size_t n;
    struct gw_idem_run *runs[];
};

struct gw_idem_state {
    pthread_mutex_t lock;          /* what a request takes: the tables and the published runset */
    struct gw_idem_table inflight; /* claims, small: grows with concurrency only */
    struct gw_idem_table active;   /* durable entries since the last freeze */
    struct gw_idem_table *frozen;  /* full or persisted tables not yet in a run, oldest first */
    size_t nfrozen, frozen_cap;
    struct gw_idem_table spare; /* zeroed, to become the active table (slots NULL when none) */
    struct gw_idem_runset *runs;
    uint64_t version; /* bumped when entries leave RAM for a run */
    size_t durable;
    pthread_cond_t wake;
    int stop;

    pthread_mutex_t io_lock; /* one writer of runs and the manifest at a time */
    uint64_t durable_seq;    /* as in the manifest on disk */
    uint64_t next_run;

    int lock_fd; /* <dir>/lock, flock'ed while open */
    pthread_t thread;
    int thread_started;
    uint64_t window_ms;
    struct gw_idem_tuning tune;
    char dir[4000]; /* <state-dir>/index */
};

uint64_t gw_idem__now(struct gw_idem_state *s);

/* Runsets. */
struct gw_idem_runset *gw_idem__runset_new(size_t n);
struct gw_idem_runset *gw_idem__runset_get(struct gw_idem_state *s); /* lock held */
void gw_idem__runset_put(struct gw_idem_runset *set);
/* 1 with *rec when a run holds `key`, 0 when none does, -EIO when a block read was bad. */
int gw_idem__runset_find(const struct gw_idem_runset *set, struct gw_idem_key key,
                         const struct gw_idem_rec **rec);
/* Publishes `set` (taking its reference) with the lock held. Returns the old list, for the
 * caller to put AFTER unlocking: its last put may unmap runs, too slow for under the lock. */
struct gw_idem_runset *gw_idem__publish_locked(struct gw_idem_state *s, struct gw_idem_runset *set);

/* The lock held: moves the active table to the frozen list and starts a fresh one. Returns 0
 * or -ENOMEM. */
int gw_idem__freeze_locked(struct gw_idem_state *s);

/* io_lock held: writes the frozen tables as one run and a manifest with `durable_seq`.
 * Returns 0 or -errno with err filled. */
int gw_idem__flush(struct gw_idem_state *s, uint64_t durable_seq, struct gw_error *err);

/* Merges the runs of the lowest full tier into one (size-tiered). Returns 1 when it merged,
 * 0 when no tier is full, or -errno with err filled. */
int gw_idem__merge_once(struct gw_idem_state *s, struct gw_error *err);

/* io_lock held: writes a manifest listing `set` with `durable_seq`. Returns 0 or -errno. */
int gw_idem__write_manifest(struct gw_idem_state *s, const struct gw_idem_runset *set,
                            uint64_t durable_seq);

int gw_idem__thread_start(struct gw_idem_state *s);
void gw_idem__thread_stop(struct gw_idem_state *s);

#endif
