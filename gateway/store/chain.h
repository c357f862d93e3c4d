/* The epoch chain (docs/contract.md §7, docs/journal.md §2): every epoch the journal records, in
 * order, as GET /v1/epochs lists it and as replay and reloads extend it. Thread-safe. */
#ifndef SHARDGATE_GW_CHAIN_H
#define SHARDGATE_GW_CHAIN_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "epoch.h"
#include "error.h"

#define GW_EPOCH_TIME_LEN 24 /* YYYY-MM-DDTHH:MM:SS.mmmZ */

enum gw_epoch_source { GW_SOURCE_START, GW_SOURCE_SIGHUP, GW_SOURCE_ADMIN };

/* One epoch record, as the journal holds it (a legacy record: time "" and source start). */
struct gw_epoch_entry {
    char epoch[GW_EPOCH_HEX_LEN + 1];
    char ring_id[GW_EPOCH_HEX_LEN + 1];
    uint64_t epoch_seq;
    char prev[GW_EPOCH_HEX_LEN + 1]; /* "" for the first (null) */
    enum gw_epoch_source source;
    char time[GW_EPOCH_TIME_LEN + 1]; /* "" when unknown (null) */
    uint64_t first_seq;
};

struct gw_epoch_chain {
    pthread_mutex_t lock;
    struct gw_epoch_entry *entries;
    size_t count, cap;
    int initialized; /* gw_chain_free is a no-op on a chain never initialized */
};

void gw_chain_init(struct gw_epoch_chain *c);
void gw_chain_free(struct gw_epoch_chain *c);

/* Appends a copy of `e`, which must continue the chain (epoch_seq + 1, prev = the latest epoch).
 * Returns 0 or -ENOMEM. */
int gw_chain_append(struct gw_epoch_chain *c, const struct gw_epoch_entry *e);

/* Copies the latest entry to *out. Returns 1, or 0 when the chain is empty. */
int gw_chain_latest(struct gw_epoch_chain *c, struct gw_epoch_entry *out);

/* Copies the entry with this epoch_seq (the chain holds epoch_seq 1, 2, ... in order) to *out.
 * Returns 1, or 0 when there is none. */
int gw_chain_at(struct gw_epoch_chain *c, uint64_t epoch_seq, struct gw_epoch_entry *out);

/* Copies the latest entry with this epoch id (or, with by_ring, this ring id) to *out.
 * Returns 1, or 0 when there is none. */
int gw_chain_find(struct gw_epoch_chain *c, const char *id, int by_ring,
                  struct gw_epoch_entry *out);

/* The entry that follows the latest one for epoch `epoch` of ring `ring_id` (first_seq, time
 * and source are the caller's). */
void gw_chain_next(struct gw_epoch_chain *c, const char *epoch, const char *ring_id,
                   struct gw_epoch_entry *out);

/* Appends {"epochs":[{"epoch",...},...]} (docs/api.md §16), oldest first. */
void gw_chain_write(struct gw_buf *out, struct gw_epoch_chain *c);

/* Appends the keys epoch_seq, prev, source, time, first_seq of `e` as the epoch record and
 * GET /v1/epochs spell them: `,"epoch_seq":N,"prev":...,"first_seq":N`. */
void gw_chain_write_links(struct gw_buf *out, const struct gw_epoch_entry *e);

const char *gw_source_name(enum gw_epoch_source s);
/* Parses "start", "sighup" or "admin". Returns 0 or -EINVAL. */
int gw_source_parse(const char *name, enum gw_epoch_source *out);

/* Writes the current UTC time as YYYY-MM-DDTHH:MM:SS.mmmZ. */
void gw_chain_now(char out[GW_EPOCH_TIME_LEN + 1]);

/* An epoch a store holds, handed over (gw_store_catch_up, the database's adopt and publish):
 * its contract, its members (taken over: the callee frees them) and its chain entry. Returns 0
 * or a negative code. */
struct gw_contract;
struct gw_membership;
typedef int (*gw_epoch_fn)(void *ctx, const struct gw_contract *contract,
                           struct gw_membership *members, const struct gw_epoch_entry *e,
                           struct gw_error *err);

#endif
