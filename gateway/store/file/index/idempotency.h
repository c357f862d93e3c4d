/* The idempotency index (docs/api.md §3, docs/journal.md §9): batch_id -> fingerprint and where
 * its receipt lies, the batch ids still being journaled, and its database under
 * <state-dir>/index/ so that a restart does not rebuild it from the whole journal. RAM is
 * bounded whatever the history (docs/decisions.md §15). Thread-safe. */
#ifndef SHARDGATE_GW_IDEMPOTENCY_H
#define SHARDGATE_GW_IDEMPOTENCY_H

#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "error.h"
#include "idem_tuning.h"

struct gw_idem_ref {  /* where a durable receipt's bytes are */
    uint64_t segment; /* first_seq of the segment holding it */
    uint64_t offset;  /* of the receipt bytes in that segment file */
    uint64_t len;
    uint64_t seq;
    uint64_t fp_prefix; /* the batch fingerprint's first 8 bytes, big-endian */
};

struct gw_idem_options {
    uint64_t window_ms; /* 0: ids remembered for ever */
};

enum gw_idem_verdict {
    GW_IDEM_NEW,       /* unknown id: now claimed as in flight by the caller */
    GW_IDEM_REPLAY,    /* durable with the same fingerprint: answer the stored receipt */
    GW_IDEM_REUSED,    /* durable with another fingerprint */
    GW_IDEM_IN_FLIGHT, /* claimed by a request whose receipt is not durable yet */
    GW_IDEM_EXPIRED,   /* acknowledged longer ago than the window: 422 batch_id_expired */
};

struct gw_idem_state;
struct gw_idem {
    struct gw_idem_state *s;
};

/* Opens (creating) <state_dir>/index/. *durable_seq: every acknowledged id with seq <= it is in
 * the index's files (0 when empty, or when the files were unusable: then logged as
 * index_unusable and started empty, and the caller must re-insert from every segment).
 * Returns 0, -ENOMEM, or -errno with err filled (the directory cannot be made or read). */
int gw_idem_open(struct gw_idem *t, const char *state_dir, const struct gw_idem_options *o,
                 uint64_t *durable_seq, struct gw_error *err);
void gw_idem_close(struct gw_idem *t);

/* What a caller says when a lookup returned -EIO (docs/journal.md §9). */
#define GW_IDEM_BAD_BLOCK_MSG                                                                      \
    "idempotency index: a block of its files failed its checksum (logged as "                      \
    "index_corrupt); stop the server and remove the state dir's index/ directory: the "            \
    "next start rebuilds it from the journal and the archived ids files"

/* Looks `id` up; an unknown id is claimed as in flight (verdict NEW). For REPLAY, *ref says where
 * the receipt is. Returns 0, -ENOMEM (nothing claimed) or -EIO (the database failed, a block
 * failing its checksum, logged as index_corrupt: whether the id is known cannot be said, so
 * nothing is claimed). */
int gw_idem_claim(struct gw_idem *t, const char *id, size_t len,
                  const unsigned char fingerprint[GW_FINGERPRINT_LEN],
                  enum gw_idem_verdict *verdict, struct gw_idem_ref *ref);

/* Turns a claim into a durable entry whose receipt is at `ref`. */
void gw_idem_commit(struct gw_idem *t, const char *id, size_t len, struct gw_idem_ref ref);

/* Drops a claim whose receipt will not be journaled. */
void gw_idem_release(struct gw_idem *t, const char *id, size_t len);

/* Replay: adds a durable entry; an identical existing entry (same id and seq) is 0 (no-op);
 * the same id at another seq is -EEXIST; -ENOMEM; -EIO as for a claim. */
int gw_idem_insert(struct gw_idem *t, const char *id, size_t len,
                   const unsigned char fingerprint[GW_FINGERPRINT_LEN], struct gw_idem_ref ref);

/* Finds a durable entry. Returns 0 and *ref, -ENOENT (unknown or still in flight) or -EIO as
 * for a claim. */
int gw_idem_find(struct gw_idem *t, const char *id, size_t len, struct gw_idem_ref *ref);

/* Makes every committed entry with seq <= through_seq durable in the index's files (a flush of
 * the database, synced). The caller has committed or inserted every id with seq <= through_seq
 * before. Called from the checkpoint thread, never a request thread. Returns 0 or -errno with
 * err filled. */
int gw_idem_persist(struct gw_idem *t, uint64_t through_seq, struct gw_error *err);

/* The highest seq of any id the index holds (docs/journal.md §9): past the open's durable_seq
 * when its memtable was flushed on its own before a crash; 0 for none. */
uint64_t gw_idem_top_seq(struct gw_idem *t);

/* Removes the files of <state_dir>/index/ (closed) but its lock: the next gw_idem_open starts it
 * empty, durable_seq 0, as after `rm -rf index/` (docs/journal.md §9). */
void gw_idem_discard(const char *state_dir);

/* gw_idem_open with `tune` (NULL: the defaults). */
int gw_idem_open_tuned(struct gw_idem *t, const char *state_dir, const struct gw_idem_options *o,
                       const struct gw_idem_tuning *tune, uint64_t *durable_seq,
                       struct gw_error *err);

#endif
