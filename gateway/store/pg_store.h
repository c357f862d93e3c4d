/* --store postgres:// (docs/journal.md §10): the receipts, totals and epochs of every replica in
 * one PostgreSQL database. A writer thread commits each group of receipts in one transaction
 * (group commit, as the file store's journal writer); request threads read through a second
 * connection. The database decides idempotency, so a retry that lands on another replica
 * replays (docs/api.md §3). */
#ifndef SHARDGATE_GW_PG_STORE_H
#define SHARDGATE_GW_PG_STORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "chain.h"
#include "commit.h"
#include "metrics.h"
#include "pg_conn.h"
#include "topology.h"
#include "worker.h"

struct gw_pg_store {
    struct gw_pg_conn writer; /* the writer thread's */
    struct gw_pg_conn reader; /* request threads', under read_lock */
    pthread_mutex_t read_lock;
    struct gw_worker worker; /* its lock guards head and tail */
    struct gw_commit_item *head, *tail;
    atomic_int available;  /* 1 while the database answers (docs/api.md §10) */
    struct gw_error error; /* why it does not (under worker.lock) */
    struct gw_metrics *metrics;
    struct gw_epoch_chain chain; /* the database's epochs, as GET /v1/epochs lists them */
    unsigned delay_ms;           /* test only: as the file store's committer */
};

/* Connects, checks the schema is this binary's (else -EPROTO: run `shardgate db migrate`),
 * records `topo`'s epoch as a start epoch unless it is the database's latest, loads the epoch
 * chain and starts the writer. *epoch_seq: the epoch in force. Returns 0, -ENOTCONN/-EIO/-EPROTO
 * /-EINVAL (an epoch row the chain rules refuse) with err->msg, or -ENOMEM. */
int gw_pg_store_open(struct gw_pg_store *s, const char *url, const struct gw_topology *topo,
                     struct gw_metrics *metrics, unsigned delay_ms, uint64_t *epoch_seq,
                     struct gw_error *err);

/* Queues a receipt; its `done` runs on the writer thread with rc 0 and a verdict once the
 * transaction committed, or -EIO when it did not (nothing acknowledged). */
void gw_pg_store_submit(struct gw_pg_store *s, struct gw_commit_item *item);

/* 1 when the last statement or the once-a-second check reached the database. */
int gw_pg_store_available(struct gw_pg_store *s);

/* The stored receipt of batch_id into `out` (appended). Returns 0, -ENOENT, -ENOMEM or -EIO
 * (the database cannot be read; err set). */
int gw_pg_store_find(struct gw_pg_store *s, const char *batch_id, struct gw_buf *out,
                     struct gw_error *err);

/* One shard's totals over every epoch, as decimal strings (exact). */
struct gw_pg_total {
    char id[65];
    char received[48], load[48];
    uint64_t weight, capacity; /* of the latest epoch that gave the shard a total */
};
/* Every shard with a total, in id order: *out (the caller frees it) and *count. Returns 0,
 * -ENOMEM or -EIO (err set). */
int gw_pg_store_totals(struct gw_pg_store *s, struct gw_pg_total **out, size_t *count,
                       struct gw_error *err);

/* Starts the writer thread (pg_commit.c; gw_pg_store_open calls it). Returns 0 or -errno. */
int gw_pg_store_start_writer(struct gw_pg_store *s, struct gw_error *err);

/* Commits what is queued, then stops the writer. Later submits fail at once with -EIO. */
void gw_pg_store_stop(struct gw_pg_store *s);

/* Stops if needed and closes both connections. */
void gw_pg_store_close(struct gw_pg_store *s);

#endif
