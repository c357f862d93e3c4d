/* The idempotency table (docs/api.md §3, docs/journal.md §5): batch_id -> fingerprint and where its
 * receipt lies in the journal, plus the batch ids still being journaled. Thread-safe. */
#ifndef SHARDGATE_GW_IDEMPOTENCY_H
#define SHARDGATE_GW_IDEMPOTENCY_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "error.h"

enum gw_idem_verdict {
    GW_IDEM_NEW,       /* unknown id: now claimed as in flight by the caller */
    GW_IDEM_REPLAY,    /* durable with the same fingerprint: answer the stored receipt */
    GW_IDEM_REUSED,    /* durable with another fingerprint */
    GW_IDEM_IN_FLIGHT, /* claimed by a request whose receipt is not durable yet */
    GW_IDEM_EXPIRED,   /* acknowledged longer ago than the window: 422 batch_id_expired */
};

/* Where a durable receipt's bytes are (docs/journal.md §6). */
struct gw_idem_ref {
    uint64_t segment; /* first_seq of the segment holding it */
    uint64_t offset;  /* of the receipt bytes in that segment file */
    uint64_t len;
    uint64_t seq;
};

struct gw_idem_options {
    uint64_t window_ms; /* 0: ids remembered for ever */
};

struct gw_idem_entry;

struct gw_idem {
    pthread_mutex_t lock;
    struct gw_idem_entry **buckets;
    size_t mask;
    size_t count;   /* entries, durable or in flight */
    size_t durable; /* durable entries */
};

/* Opens the table for `state_dir`. *durable_seq: every acknowledged id with seq <= it is in the
 * index files. This in-RAM table keeps no files: always 0, and the caller re-inserts from every
 * segment. Returns 0 or -ENOMEM. */
int gw_idem_open(struct gw_idem *t, const char *state_dir, const struct gw_idem_options *o,
                 uint64_t *durable_seq, struct gw_error *err);
void gw_idem_close(struct gw_idem *t);

/* Makes every committed entry with seq <= through_seq durable in the index files. No files
 * here: 0. */
int gw_idem_persist(struct gw_idem *t, uint64_t through_seq, struct gw_error *err);

/* Looks `id` up; an unknown id is claimed as in flight with `fingerprint` (verdict NEW). For
 * REPLAY, *ref says where the receipt is. Returns 0, or -ENOMEM (nothing claimed). */
int gw_idem_claim(struct gw_idem *t, const char *id, size_t len,
                  const unsigned char fingerprint[GW_FINGERPRINT_LEN],
                  enum gw_idem_verdict *verdict, struct gw_idem_ref *ref);

/* Turns a claim into a durable entry whose receipt is at `ref`. */
void gw_idem_commit(struct gw_idem *t, const char *id, size_t len, struct gw_idem_ref ref);

/* Drops a claim whose receipt will not be journaled. */
void gw_idem_release(struct gw_idem *t, const char *id, size_t len);

/* Adds a durable entry (journal replay). Returns 0 (also when the same id is there at the same
 * seq), -EEXIST when the id is known at another seq, -ENOMEM. */
int gw_idem_insert(struct gw_idem *t, const char *id, size_t len,
                   const unsigned char fingerprint[GW_FINGERPRINT_LEN], struct gw_idem_ref ref);

/* Finds a durable entry. Returns 0 and *ref, or -ENOENT (unknown or still in flight). */
int gw_idem_find(struct gw_idem *t, const char *id, size_t len, struct gw_idem_ref *ref);

/* Number of durable entries. */
size_t gw_idem_durable(struct gw_idem *t);

#endif
