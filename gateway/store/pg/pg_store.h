/* --store postgres:// (docs/journal.md §10): the receipts, totals and epochs of every replica in
 * one PostgreSQL database. A writer thread commits each group of receipts in one transaction
 * (group commit, as the file store's journal writer) that no other replica's waits for; the
 * replica holding the sequencer's role gives the committed receipts their seqs afterwards;
 * request threads read through another connection. The database decides idempotency, so a
 * retry that lands on another replica replays (docs/api.md §3). */
#ifndef SHARDGATE_GW_PG_STORE_H
#define SHARDGATE_GW_PG_STORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "chain.h"
#include "contract.h"
#include "ledger.h"
#include "feed_record.h"
#include "membership.h"
#include "commit_item.h"
#include "metrics.h"
#include "pg_conn.h"
#include "topology.h"
#include "worker.h"

/* Runs on the listener thread after every notification and every (re)connect, with the
 * listener's connection. */
typedef void (*gw_pg_changed_fn)(void *ctx, struct gw_pg_conn *c);

struct gw_pg_store {
    struct gw_pg_conn writer; /* the writer thread's */
    struct gw_pg_conn reader; /* request threads' epoch reads and changes, under read_lock */
    struct gw_pg_conn query;  /* request threads' reads of receipts, totals and the feed, under
                                 read_lock: on --read-store's database when given */
    pthread_mutex_t read_lock;
    struct gw_worker worker; /* its lock guards head and tail */
    struct gw_commit_item *head, *tail;
    atomic_int available;  /* 1 while the database answers (docs/api.md §10) */
    struct gw_error error; /* why it does not (under worker.lock) */
    struct gw_metrics *metrics;
    struct gw_epoch_chain chain; /* the database's epochs, as GET /v1/epochs lists them */
    struct gw_pg_conn listener;  /* pg_listen.c's */
    pthread_t listen_thread;
    int listening;
    atomic_int listen_stop;
    gw_pg_changed_fn changed;
    void *changed_ctx;
    unsigned delay_ms; /* test only: as the file store's committer */
    struct gw_commit_hook hook;
    uint64_t start_seq; /* the sequencer's last_seq at open */
    /* pg_sequencer.c: its thread and connection; poked by this replica's commits */
    struct gw_pg_conn sequencer;
    struct gw_worker seq_worker;
    int seq_poked; /* under seq_worker.lock */
};

/* Connects, checks the schema is this binary's (else -EPROTO: run `shardgate db migrate`) and
 * loads the epoch chain: the database's latest epoch is handed to `adopt` (the membership lives
 * in the database, docs/journal.md §10); an empty chain gets `topo`'s as its first epoch. Reads
 * start_seq, then starts the writer. Returns 0, -ENOTCONN/-EIO/-EPROTO/-EINVAL (an epoch row the
 * chain rules refuse) with err->msg, or -ENOMEM. */
struct gw_pg_open {
    const char *url;
    const char *read_url;           /* NULL: url (docs/operations.md §9.1, reads on a standby) */
    const struct gw_topology *topo; /* the files' */
    gw_epoch_fn adopt;
    void *adopt_ctx;
    struct gw_metrics *metrics;
    unsigned delay_ms;          /* test only: as the file store's committer */
    struct gw_commit_hook hook; /* told of every sequencing round, by NOTIFY (pg_listen.c) */
};
int gw_pg_store_open(struct gw_pg_store *s, const struct gw_pg_open *o, struct gw_error *err);

/* pg_epochs.c. The chain at start (gw_pg_store_open's). */
int gw_pg_epochs_open(struct gw_pg_store *s, const struct gw_topology *topo, gw_epoch_fn adopt,
                      void *ctx, struct gw_error *err);

/* Appends every epoch row after the chain's latest to the chain, read on connection `c`, and
 * hands the newest to `apply` (not called when nothing is new). The caller serializes calls
 * (the server's reload lock). Returns 0 or a negative code (err set). */
int gw_pg_epochs_catch_up(struct gw_pg_store *s, struct gw_pg_conn *c, gw_epoch_fn apply, void *ctx,
                          struct gw_error *err);

/* gw_pg_epochs_catch_up on the readers' connection. */
int gw_pg_store_catch_up(struct gw_pg_store *s, gw_epoch_fn apply, void *ctx, struct gw_error *err);

/* Records the next epoch `t` in one transaction on the readers' connection: the sequencer row
 * locked, the database's latest epoch must still be `base` (else -ESTALE: another replica
 * changed it first), the row inserted with first_seq after the last receipt, and a NOTIFY on
 * channel shardgate_epochs sent at COMMIT. *out: its chain entry, appended once committed.
 * Returns 0, -ESTALE, or a negative code (err set). */
int gw_pg_epoch_record(struct gw_pg_store *s, const struct gw_topology *t,
                       enum gw_epoch_source source, const char *base, struct gw_epoch_entry *out,
                       struct gw_error *err);

/* Appends the epoch record of chain entry `e` (its row's `record`, docs/journal.md §10), read
 * on the readers' connection. Returns 0, -ENOENT (no such row), -EIO (err set), -ENOMEM. */
int gw_pg_epoch_record_read(struct gw_pg_store *s, const struct gw_epoch_entry *e,
                            struct gw_buf *out, struct gw_error *err);

/* pg_listen.c: a thread LISTENing on shardgate_epochs on its own connection (gw_pg_changed_fn
 * runs on it). */
int gw_pg_listener_start(struct gw_pg_store *s, gw_pg_changed_fn changed, void *ctx,
                         struct gw_error *err);
void gw_pg_listener_stop(struct gw_pg_store *s);

/* pg_sequencer.c: the thread that asks for the sequencer's role every second and, holding it,
 * gives the committed receipts of every replica their seqs (a round after each poke, or polled
 * every 1..50 ms). Stopping, it sequences what is left when it leads. */
int gw_pg_sequencer_start(struct gw_pg_store *s, struct gw_error *err);
/* Rounds on connection c until no receipt waits, in a transaction of the caller's that holds
 * the sequencer row (SELECT ... FOR UPDATE): an epoch change gives the receipts committed before
 * it their seqs first, so its first_seq follows them. Returns how many, *last_seq after them; or
 * -EIO. */
long gw_pg_sequence_locked(struct gw_pg_conn *c, uint64_t *last_seq, struct gw_error *err);
void gw_pg_sequencer_poke(struct gw_pg_store *s);
void gw_pg_sequencer_stop(struct gw_pg_store *s);

/* Queues a receipt; its `done` runs on the writer thread with rc 0 and a verdict once the
 * transaction committed, or -EIO when it did not (nothing acknowledged). The receipt has no seq
 * yet: it is in the feed and the totals once the sequencer has given it one. */
void gw_pg_store_submit(struct gw_pg_store *s, struct gw_commit_item *item);

/* 1 when the last statement or the once-a-second check reached the database. */
int gw_pg_store_available(struct gw_pg_store *s);

/* The stored receipt of batch_id into `out` (appended). Returns 0, -ENOENT, -ENOMEM, -EIO
 * (the database cannot be read; err set) or -EBADE (the row failed its check; err says how). */
int gw_pg_store_find(struct gw_pg_store *s, const char *batch_id, struct gw_buf *out,
                     struct gw_error *err);

/* One shard's totals over every epoch, as decimal strings (exact). */
/* Every shard with a total, in bytewise id order, as ledger entries: the totals summed over
 * every replica's receipts, the weight and capacity of the latest epoch that gave the shard a
 * total. *out (the caller frees it) and *count. Returns 0, -ENOMEM or -EIO (err set). */
int gw_pg_store_totals(struct gw_pg_store *s, struct gw_ledger_entry **out, size_t *count,
                       struct gw_error *err);

/* Starts the writer thread (pg_commit.c; gw_pg_store_open calls it). Returns 0 or -errno. */
int gw_pg_store_start_writer(struct gw_pg_store *s, struct gw_error *err);

/* pg_receipt.c. GW_PG_DIGEST_TEXT: a SHA-256 as bytea text: \x, 64 hex digits, NUL. */
#define GW_PG_DIGEST_TEXT 67
/* The receipt_sha256 of a receipt row as the INSERT's text parameter. */
void gw_pg_receipt_digest(const char *receipt, size_t len, char out[GW_PG_DIGEST_TEXT]);
/* What is wrong with a receipt row read back (its receipt, and encode(receipt_sha256, 'hex')),
 * or NULL when it is the row written. */
const char *gw_pg_receipt_damage(const char *batch_id, const char *receipt, size_t len,
                                 const char *digest_hex);
/* Fills err with the answer to a damaged row (`what`, from gw_pg_receipt_damage); -EBADE. */
int gw_pg_receipt_refused(const char *batch_id, const char *what, struct gw_error *err);

/* pg_feed.c: visits the records after `after` in journal order, as gw_feed_read does (feed.h),
 * at most `max` receipts; *last: the seq of the last receipt visited (`after` when none).
 * Returns 0, -EIO (err set), -EINVAL (a row not in the journal's form), -EBADE (a row failed its
 * check; err says how) or the visitor's code. */
int gw_pg_feed_read(struct gw_pg_store *s, uint64_t after, size_t max, gw_feed_visit_fn visit,
                    void *ctx, uint64_t *last, struct gw_error *err);

/* Commits what is queued, then stops the writer. Later submits fail at once with -EIO. */
void gw_pg_store_stop(struct gw_pg_store *s);

/* Stops if needed and closes both connections. */
void gw_pg_store_close(struct gw_pg_store *s);

#endif
