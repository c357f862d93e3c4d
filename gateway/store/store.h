/* The store of `shardgate serve` (docs/architecture.md §1): the state dir's journal, index,
 * checkpoints, scrub and feed reader, or with --store postgres the PostgreSQL store; the totals
 * and the feed's waiting requests either way. Opaque: its calls (gw_store_*) are the one face
 * the HTTP layer uses, each answered by the operations of the store gw_store_open chose
 * (store_ops.h). */
#ifndef SHARDGATE_GW_STORE_H
#define SHARDGATE_GW_STORE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "chain.h"
#include "commit_item.h"
#include "feed_record.h"
#include "feed_watch.h"
#include "ledger.h"
#include "metrics.h"
#include "topology.h"

#define GW_STORE_FILE_NAME_MAX 40 /* a segment's file name and its NUL (gw_store_segment_file) */

/* The store: what it holds is its own (store_state.h), reached through the calls below. */
struct gw_store;

/* A store not yet opened, in *out; closed and freed by gw_store_close. Returns 0 or -ENOMEM. */
int gw_store_new(struct gw_store **out);

/* The totals of every epoch's shards, which the views read (view.h), and the feed's waiting
 * requests, which the journal writer wakes (feed_watch.h): both stores keep them alike. */
struct gw_ledger *gw_store_ledger(struct gw_store *s);
struct gw_feed_watch *gw_store_watch(struct gw_store *s);

/* What the store is opened with (`shardgate serve`'s options). */
struct gw_store_options {
    const char *url; /* NULL: the state dir's store; else the postgres:// URL of the database's */
    const char *read_url; /* postgres: where the reads of batches, totals and the feed go */
    const char *state_dir;
    uint64_t segment_bytes;          /* rotate the journal at this size (docs/journal.md §6) */
    uint64_t checkpoint_interval_ms; /* docs/journal.md §7 */
    uint64_t idempotency_window_ms;  /* 0: batch ids remembered for ever (docs/api.md §3) */
    uint64_t scrub_rate;             /* journal bytes the scrub reads a second, 0: none */
    unsigned max_watchers;           /* feed requests at once (docs/api.md §17) */
    unsigned commit_delay_ms;        /* test only: the writer sleeps before each group */
    /* --store postgres (docs/journal.md §10): at open, the database's latest epoch is handed to
     * `adopt` (it replaces the files' topology); while serving, the epochs another replica
     * recorded are handed to `publish`, the newest last, under `publish_lock`. */
    gw_epoch_fn adopt;
    void *adopt_ctx;
    gw_epoch_fn publish;
    void *publish_ctx;
    pthread_mutex_t *publish_lock;
};

/* Opens the store (docs/operations.md §3). The state dir's: the journal prepared
 * under its lock, the index opened, the totals and chain from the newest checkpoint that checks
 * out, the receipts after it replayed, the torn tail repaired, the epoch of `topo` journaled
 * when it changed. The database's: connected, its schema checked, its epochs read (`adopt`
 * replaces `topo` with the latest), its writer started. The chain's latest epoch is then that of
 * `topo`. Returns 0, -EINVAL (the state dir or the database cannot be used as it is), or another
 * negative code, with err set. */
int gw_store_open(struct gw_store *s, const struct gw_store_options *o, struct gw_topology *topo,
                  struct gw_metrics *metrics, struct gw_error *err);

/* Then, once the first view is published, starts the store's threads: the feed's watch, and
 * the feed's reader, the scrub, the checkpointer and the journal writer, or the database's
 * listener. Returns 0 or a negative code with err set. */
int gw_store_start(struct gw_store *s, const struct gw_store_options *o, struct gw_metrics *metrics,
                   struct gw_error *err);

/* 1 when the store takes commits: the journal writer has not failed (docs/journal.md §4), or
 * the database answered its last statement or check (docs/journal.md §10, Availability). */
int gw_store_writable(struct gw_store *s);

/* The name /readyz gives the store's check (docs/api.md §9): "journal", or "store" with
 * --store postgres. */
const char *gw_store_check_name(const struct gw_store *s);

/* Why the store takes no commits now (gw_store_writable is 0), for a 503 (docs/api.md §2). */
struct gw_store_refusal {
    const char *code; /* "journal_unavailable" or "store_unavailable" */
    int retry;        /* 1: the database may answer again soon (Retry-After) */
    struct gw_error error;
};
void gw_store_refusal(struct gw_store *s, struct gw_store_refusal *out);

struct gw_store_miss;

/* Claims batch_id `id` (`len` bytes) with this fingerprint for a commit (docs/api.md §3), in
 * the verdicts a commit gives too (commit_item.h): GW_COMMIT_NEW (claimed: submit it, or
 * release it), GW_COMMIT_REPLAY (its stored receipt appended to `stored`, without a newline),
 * GW_COMMIT_REUSED, GW_COMMIT_IN_FLIGHT or GW_COMMIT_EXPIRED. With --store postgres the commit's
 * transaction decides: always NEW here. Returns 0, or when a replay's receipt cannot be read the
 * code gw_store_read_receipt gives, with `miss` (-EUCLEAN also when the index failed a block's
 * checksum at the claim, miss->error saying so), or -ENOMEM. */
int gw_store_claim(struct gw_store *s, const char *id, size_t len, const unsigned char *fingerprint,
                   enum gw_commit_verdict *verdict, struct gw_buf *stored,
                   struct gw_store_miss *miss);

/* Gives up a claim that will not be committed (a refused batch leaves no record). */
void gw_store_release(struct gw_store *s, const char *id, size_t len);

/* Commits a claimed receipt: once durable, the index has its id and the totals its tally; on a
 * failure the claim is released. item->done then runs on the writer thread with rc 0 or a
 * negative code (commit.h). */
void gw_store_submit(struct gw_store *s, struct gw_commit_item *item);

/* Every shard of every epoch with its totals (docs/api.md §7), bytewise id order: the ledger's
 * entries, or with --store postgres the database's totals over every replica's receipts, each
 * member of `m` with none yet at 0. *out (the caller frees it) and *count. Returns 0, -ENOMEM,
 * or -EAGAIN (the store cannot be reached, err set). */
int gw_store_shard_totals(struct gw_store *s, const struct gw_membership *m,
                          struct gw_ledger_entry **out, size_t *count, struct gw_error *err);

/* The totals of the members of `m` into `out` (m->count entries, membership order); `slots` are
 * their ledger slots (the view's). Returns 0, -ENOMEM, or -EAGAIN (err set). */
int gw_store_member_totals(struct gw_store *s, const struct gw_membership *m, const size_t *slots,
                           struct gw_total *out, struct gw_error *err);

/* 1 when the store holds the membership (--store postgres, docs/journal.md §10): no shards
 * file is written, a SIGHUP changes nothing, and the epochs other replicas recorded are caught up
 * before a change is judged. 0 for the state dir's store, whose membership is the shards file. */
int gw_store_holds_membership(const struct gw_store *s);

/* Records the epoch of `next` from `source` after every receipt submitted before it, durable
 * when this returns: the journal's epoch record, or the database's row, where `base` must still
 * be the latest epoch. *entry: its chain entry. Returns 0, or with err set:
 *   -ESTALE  another replica recorded an epoch after `base` first;
 *   -EAGAIN  the database cannot be reached;
 *   -ENOMEM, -EINVAL, or -EIO (the journal writer has failed). */
int gw_store_record_epoch(struct gw_store *s, const struct gw_topology *next,
                          enum gw_epoch_source source, const char *base,
                          struct gw_epoch_entry *entry, struct gw_error *err);

/* Hands every epoch the database recorded after the chain's latest to `apply`, the newest
 * last (gw_pg_store_catch_up); the state dir's store has none to catch up. The caller
 * serializes calls. Returns 0, or as gw_store_record_epoch (-EAGAIN, -ENOMEM, -EINVAL). */
int gw_store_catch_up(struct gw_store *s, gw_epoch_fn apply, void *ctx, struct gw_error *err);

/* At shutdown, once no request is in flight: writes or commits what is queued, the last
 * checkpoint, and stops the store's threads. The HTTP daemon stops after, then gw_store_close. */
void gw_store_stop(struct gw_store *s);

/* Stops what gw_store_stop did not, and frees everything the store holds and the store itself
 * (nothing for NULL). */
void gw_store_close(struct gw_store *s);

/* The epoch chain of the store in use: every epoch recorded, oldest first (docs/contract.md §7). */
struct gw_epoch_chain *gw_store_chain(struct gw_store *s);

/* Appends the epoch record of chain entry `e` (docs/journal.md §2) without its crc32 member:
 * from the segments present (the state dir's store) or the epoch's row (PostgreSQL). Returns 0;
 * -ENOENT when the store no longer holds it (an archived segment); -EBADMSG with err->msg when
 * the line that holds it fails its check; -EAGAIN with err->msg when the database cannot be
 * read; -ENOMEM. */
int gw_store_epoch_record(struct gw_store *s, const struct gw_epoch_entry *e, struct gw_buf *out,
                          struct gw_error *err);

/* The topology of chain entry `e` (its contract and membership, its ring built) from its record
 * (epoch_topology.c). Returns 0; gw_store_epoch_record's codes, with err->msg saying which
 * record for -ENOENT; -EINVAL when the record is not usable (err set); -ENOMEM. */
int gw_store_epoch_topology(struct gw_store *s, const struct gw_epoch_entry *e,
                            struct gw_topology *out, struct gw_error *err);

/* Why a stored receipt was not read (gw_store_read_receipt). */
struct gw_store_miss {
    uint64_t seq;          /* archived or damaged: the receipt's seq */
    uint64_t earliest;     /* a feed read past the archive: the oldest seq still present */
    uint64_t segment;      /* damaged: the segment holding its line (its first_seq) */
    uint64_t line;         /* damaged: where its line starts in that segment */
    struct gw_error error; /* unavailable: what the store said */
};

/* Appends the stored receipt of batch `id` (a valid name, `len` bytes), without a newline, to
 * `out`; on an error `out` is left as it was. Returns 0;
 *   -ENOENT  no receipt for that id;
 *   -ESTALE  its receipt is in an archived segment (docs/api.md §3), miss->seq;
 *   -EBADMSG, -ENOMSG or -EILSEQ  its journal line failed its check (docs/journal.md §2.1):
 *            miss->segment, line and seq;
 *   -EUCLEAN the idempotency index failed a block's checksum (docs/journal.md §9), miss->error;
 *   -EXDEV   the index places it at a sound record of another batch or fingerprint;
 *   -EBADE   --store postgres: its row failed its check (docs/journal.md §10), miss->error;
 *   -EAGAIN  the store cannot be reached (--store postgres), miss->error;
 *   -ENOMEM or another -errno: the bytes could not be read. */
int gw_store_read_receipt(struct gw_store *s, const char *id, size_t len, struct gw_buf *out,
                          struct gw_store_miss *miss);

/* The feed (docs/api.md §17): visits the durable records after cursor `after` in journal order,
 * as gw_feed_read does (feed.h); `max` bounds the receipts one read of the database fetches (the
 * state dir's store reads until the visitor stops it); `pos` is the caller's place in the state
 * dir's journal. *last: the seq of the last receipt visited (`after` when none). Returns 0 or the
 * visitor's code;
 *   -ESTALE  `after` lies in an archived segment: miss->earliest;
 *   -EBADMSG or -ENOMSG  a journal line failed its check: miss->segment, line and seq;
 *   -EBADE   --store postgres: a receipt row failed its check, miss->error;
 *   -EAGAIN  the store cannot be reached (--store postgres), miss->error;
 *   -ENOMEM or another -errno: the records could not be read. */
int gw_store_feed_read(struct gw_store *s, uint64_t after, size_t max, gw_feed_visit_fn visit,
                       void *ctx, struct gw_feed_mark *pos, uint64_t *last,
                       struct gw_store_miss *miss);

/* The highest cursor the feed accepts: the last durable receipt's seq; with --store postgres
 * UINT64_MAX, as another replica's receipts may be announced here late. */
uint64_t gw_store_feed_head(struct gw_store *s);

/* What is wrong with a stored record, from a read's -EBADMSG, -ENOMSG or -EILSEQ. */
const char *gw_store_damage_what(struct gw_store *s, int rc);

/* Where a damaged record lies, by the `segment` a read named (gw_store_miss), in `file`
 * (GW_STORE_FILE_NAME_MAX): the journal segment's file name (the open segment's is the
 * journal's own), or the database's table. */
void gw_store_segment_file(struct gw_store *s, uint64_t segment, char *file);

#endif
