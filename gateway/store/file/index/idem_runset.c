/* The published list of runs of the idempotency index: immutable, reference-counted, swapped
 * whole under the lock so that a search never sees a half-updated list. */
#include <stdlib.h>

#include "idem_state.h"

struct gw_idem_runset *gw_idem__runset_new(size_t n)
{
    struct gw_idem_runset *set = calloc(1, sizeof(*set) + n * sizeof(set->runs[0]));
    if (set) {
        atomic_init(&set->refs, 1);
        set->n = n;
    }
    return set;
}

struct gw_idem_runset *gw_idem__runset_get(struct gw_idem_state *s)
{
    atomic_fetch_add(&s->runs->refs, 1);
    return s->runs;
}

void gw_idem__runset_put(struct gw_idem_runset *set)
{
    if (!set || atomic_fetch_sub(&set->refs, 1) != 1)
        return;
    for (size_t i = 0; i < set->n; i++)
        gw_idem_run_unref(set->runs[i]);
    free(set);
}

int gw_idem__runset_find(const struct gw_idem_runset *set, struct gw_idem_key key,
                         const struct gw_idem_rec **rec)
{
    for (size_t i = 0; i < set->n; i++) {
        int rc = gw_idem_run_find(set->runs[i], key, rec);
        if (rc != 0)
            return rc;
    }
    return 0;
}

struct gw_idem_runset *gw_idem__publish_locked(struct gw_idem_state *s, struct gw_idem_runset *set)
{
    struct gw_idem_runset *old = s->runs;
    s->runs = set;
    s->version++;
    return old;
}
