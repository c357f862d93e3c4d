/* The view: one immutable, refcounted {topology, epoch_seq, ledger slots} that requests use
 * whole. The server publishes a new one atomically at a reload; every request takes one
 * reference for its whole life (dispatch, render, commit), and the last user of an old view
 * frees it (docs/decisions.md §21). */
#ifndef SHARDGATE_GW_VIEW_H
#define SHARDGATE_GW_VIEW_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "ledger.h"
#include "topology.h"

struct gw_view {
    atomic_long refs;
    struct gw_topology topo;
    uint64_t epoch_seq;
    size_t *slots; /* the ledger slot of each member, membership order */
};

/* The published view. */
struct gw_view_slot {
    pthread_mutex_t lock;
    struct gw_view *current; /* holds one reference */
    atomic_long alive;       /* views not yet freed, this one included */
};

/* Makes a view of `topo` (taken over, even on failure) with one reference, its shards made
 * known to the ledger. Returns 0, or -ENOMEM with err set. */
int gw_view_new(struct gw_view_slot *slot, struct gw_topology *topo, uint64_t epoch_seq,
                struct gw_ledger *ledger, struct gw_view **out, struct gw_error *err);

/* Drops one reference; the last one frees the view. */
void gw_view_unref(struct gw_view *v);

void gw_view_slot_init(struct gw_view_slot *slot);
/* The published view with one more reference (the caller unrefs it). */
struct gw_view *gw_view_acquire(struct gw_view_slot *slot);
/* Publishes `v` (its reference moves to the slot) and drops the slot's reference to the old
 * view, freed once its last request is done. */
void gw_view_publish(struct gw_view_slot *slot, struct gw_view *v);
/* Drops the published view; call once no request can run. */
void gw_view_slot_free(struct gw_view_slot *slot);

#endif
