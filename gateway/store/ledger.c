/* Cumulative per-shard totals by shard id, added only once a receipt is durable; a shard keeps
 * its totals when it leaves the membership and when it comes back (docs/api.md §7). */
#include "ledger.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int gw_ledger_init(struct gw_ledger *l)
{
    memset(l, 0, sizeof(*l));
    pthread_mutex_init(&l->lock, NULL);
    return 0;
}

void gw_ledger_free(struct gw_ledger *l)
{
    for (size_t i = 0; i < l->epoch_count; i++)
        free(l->epochs[i].by_slot);
    free(l->epochs);
    free(l->entries);
    free(l->by_id);
    pthread_mutex_destroy(&l->lock);
    memset(l, 0, sizeof(*l));
}

static int id_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    return c ? c : (alen > blen) - (alen < blen);
}

/* Where `id` is or would go in by_id (lock held); *found says which. */
static size_t locate(const struct gw_ledger *l, const char *id, size_t len, int *found)
{
    size_t lo = 0, hi = l->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct gw_ledger_entry *e = &l->entries[l->by_id[mid]];
        int c = id_cmp(e->id, e->id_len, id, len);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = 0;
    return lo;
}

static int grow(struct gw_ledger *l)
{
    size_t cap = l->cap ? 2 * l->cap : 16;
    struct gw_ledger_entry *e = realloc(l->entries, cap * sizeof(*e));
    if (e)
        l->entries = e;
    size_t *o = e ? realloc(l->by_id, cap * sizeof(*o)) : NULL;
    if (!o)
        return -ENOMEM;
    l->by_id = o;
    l->cap = cap;
    return 0;
}

/* The slot of a shard, added when new (lock held). Returns the slot or -ENOMEM. */
static long slot_of(struct gw_ledger *l, const struct gw_shard *s)
{
    int found;
    size_t at = locate(l, s->id, s->id_len, &found);
    if (!found) {
        if (l->count == l->cap && grow(l) != 0)
            return -ENOMEM;
        struct gw_ledger_entry *e = &l->entries[l->count];
        memset(e, 0, sizeof(*e));
        memcpy(e->id, s->id, s->id_len);
        e->id_len = s->id_len;
        memmove(l->by_id + at + 1, l->by_id + at, (l->count - at) * sizeof(*l->by_id));
        l->by_id[at] = l->count++;
    }
    struct gw_ledger_entry *e = &l->entries[l->by_id[at]];
    e->weight = s->weight;
    e->capacity = s->capacity;
    return (long)l->by_id[at];
}

int gw_ledger_register(struct gw_ledger *l, const struct gw_membership *m, size_t *slots)
{
    int rc = 0;
    pthread_mutex_lock(&l->lock);
    for (size_t i = 0; i < m->count && rc == 0; i++) {
        long slot = slot_of(l, &m->shards[i]);
        if (slot < 0)
            rc = (int)slot;
        else if (slots)
            slots[i] = (size_t)slot;
    }
    pthread_mutex_unlock(&l->lock);
    return rc;
}

/* Out of memory for a per-epoch total: this process writes no more checkpoints (lock held). */
static struct gw_total *totals_lost(struct gw_ledger *l)
{
    l->epochs_incomplete = 1;
    return NULL;
}

/* The totals of epoch `epoch_seq`, room for every slot (lock held). NULL when out of memory. */
static struct gw_total *epoch_totals(struct gw_ledger *l, uint64_t epoch_seq)
{
    size_t at = l->epoch_count;
    while (at > 0 && l->epochs[at - 1].epoch_seq > epoch_seq)
        at--; /* receipts name the latest epochs: this loop is short */
    if (at == 0 || l->epochs[at - 1].epoch_seq != epoch_seq) {
        if (l->epoch_count == l->epoch_cap) {
            size_t cap = l->epoch_cap ? 2 * l->epoch_cap : 8;
            struct gw_ledger_epoch *e = realloc(l->epochs, cap * sizeof(*e));
            if (!e)
                return totals_lost(l);
            l->epochs = e;
            l->epoch_cap = cap;
        }
        memmove(l->epochs + at + 1, l->epochs + at, (l->epoch_count - at) * sizeof(*l->epochs));
        l->epochs[at] = (struct gw_ledger_epoch){.epoch_seq = epoch_seq};
        l->epoch_count++;
        at++;
    }
    struct gw_ledger_epoch *e = &l->epochs[at - 1];
    if (e->slots < l->count) {
        struct gw_total *t = realloc(e->by_slot, l->cap * sizeof(*t));
        if (!t)
            return totals_lost(l);
        memset(t + e->slots, 0, (l->cap - e->slots) * sizeof(*t));
        e->by_slot = t;
        e->slots = l->cap;
    }
    return e->by_slot;
}

int gw_ledger_add(struct gw_ledger *l, uint64_t epoch_seq, const size_t *slots,
                  const struct gw_tally *tally, size_t count)
{
    pthread_mutex_lock(&l->lock);
    struct gw_total *per_epoch = epoch_totals(l, epoch_seq);
    for (size_t i = 0; i < count; i++) {
        assert(slots[i] < l->count);
        l->entries[slots[i]].total.load += tally[i].load;
        l->entries[slots[i]].total.received += tally[i].received;
        if (per_epoch) {
            per_epoch[slots[i]].load += tally[i].load;
            per_epoch[slots[i]].received += tally[i].received;
        }
    }
    pthread_mutex_unlock(&l->lock);
    return per_epoch ? 0 : -ENOMEM;
}

int gw_ledger_add_id(struct gw_ledger *l, uint64_t epoch_seq, const char *id, size_t id_len,
                     uint64_t load, uint64_t received)
{
    int found;
    pthread_mutex_lock(&l->lock);
    size_t at = locate(l, id, id_len, &found);
    struct gw_total *per_epoch = found ? epoch_totals(l, epoch_seq) : NULL;
    if (per_epoch) {
        size_t slot = l->by_id[at];
        l->entries[slot].total.load += load;
        l->entries[slot].total.received += received;
        per_epoch[slot].load += load;
        per_epoch[slot].received += received;
    }
    pthread_mutex_unlock(&l->lock);
    return !found ? -ENOENT : per_epoch ? 0 : -ENOMEM;
}

int gw_ledger_restore(struct gw_ledger *l, const struct gw_ledger_entry *e)
{
    struct gw_shard s = {.id_len = e->id_len, .weight = e->weight, .capacity = e->capacity};
    memcpy(s.id, e->id, e->id_len);
    pthread_mutex_lock(&l->lock);
    long slot = slot_of(l, &s);
    if (slot >= 0)
        l->entries[slot].total = e->total;
    pthread_mutex_unlock(&l->lock);
    return slot < 0 ? (int)slot : 0;
}

int gw_ledger_restore_epoch(struct gw_ledger *l, uint64_t epoch_seq, const char *id, size_t id_len,
                            const struct gw_total *t)
{
    int found;
    pthread_mutex_lock(&l->lock);
    size_t at = locate(l, id, id_len, &found);
    struct gw_total *per_epoch = found ? epoch_totals(l, epoch_seq) : NULL;
    if (per_epoch)
        per_epoch[l->by_id[at]] = *t;
    pthread_mutex_unlock(&l->lock);
    return !found ? -ENOENT : per_epoch ? 0 : -ENOMEM;
}

void gw_ledger_totals(struct gw_ledger *l, const size_t *slots, size_t count, struct gw_total *out)
{
    pthread_mutex_lock(&l->lock);
    for (size_t i = 0; i < count; i++)
        out[i] = l->entries[slots[i]].total;
    pthread_mutex_unlock(&l->lock);
}

struct gw_ledger_entry *gw_ledger_snapshot(struct gw_ledger *l, size_t *count)
{
    pthread_mutex_lock(&l->lock);
    struct gw_ledger_entry *out = malloc((l->count ? l->count : 1) * sizeof(*out));
    *count = out ? l->count : 0;
    for (size_t i = 0; out && i < l->count; i++)
        out[i] = l->entries[l->by_id[i]];
    pthread_mutex_unlock(&l->lock);
    return out;
}
