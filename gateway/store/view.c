/* Views: a reload builds a new one off the request path and swaps one pointer under a short
 * lock; a request keeps the view it started with until it completes. */
#include "view.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct view_owner {
    struct gw_view view;
    atomic_long *alive; /* the slot's count of views not yet freed */
};

int gw_view_new(struct gw_view_slot *slot, struct gw_topology *topo, uint64_t epoch_seq,
                struct gw_ledger *ledger, struct gw_view **out, struct gw_error *err)
{
    struct view_owner *o = calloc(1, sizeof(*o));
    size_t n = topo->members.count;
    size_t *slots = malloc((n ? n : 1) * sizeof(*slots));
    if (!o || !slots || gw_ledger_register(ledger, &topo->members, slots) != 0) {
        free(o);
        free(slots);
        gw_topology_free(topo);
        gw_error_set(err, "", "out of memory");
        return -ENOMEM;
    }
    atomic_init(&o->view.refs, 1);
    o->view.topo = *topo;
    memset(topo, 0, sizeof(*topo));
    o->view.epoch_seq = epoch_seq;
    o->view.slots = slots;
    o->alive = &slot->alive;
    atomic_fetch_add(&slot->alive, 1);
    *out = &o->view;
    return 0;
}

void gw_view_unref(struct gw_view *v)
{
    long before = atomic_fetch_sub(&v->refs, 1);
    assert(before >= 1); /* never below zero: one unref per reference taken */
    if (before != 1)
        return;
    struct view_owner *o = (struct view_owner *)v;
    gw_topology_free(&v->topo);
    free(v->slots);
    atomic_fetch_sub(o->alive, 1);
    free(o);
}

void gw_view_slot_init(struct gw_view_slot *slot)
{
    memset(slot, 0, sizeof(*slot));
    pthread_mutex_init(&slot->lock, NULL);
    atomic_init(&slot->alive, 0);
}

struct gw_view *gw_view_acquire(struct gw_view_slot *slot)
{
    pthread_mutex_lock(&slot->lock);
    struct gw_view *v = slot->current;
    long before = atomic_fetch_add(&v->refs, 1);
    assert(before >= 1); /* the slot's own reference keeps the published view alive */
    (void)before;
    pthread_mutex_unlock(&slot->lock);
    return v;
}

void gw_view_publish(struct gw_view_slot *slot, struct gw_view *v)
{
    assert(atomic_load(&v->refs) >= 1);
    pthread_mutex_lock(&slot->lock);
    struct gw_view *old = slot->current;
    slot->current = v;
    pthread_mutex_unlock(&slot->lock);
    if (old)
        gw_view_unref(old);
}

void gw_view_slot_free(struct gw_view_slot *slot)
{
    if (slot->current)
        gw_view_unref(slot->current);
    slot->current = NULL;
    pthread_mutex_destroy(&slot->lock);
}
