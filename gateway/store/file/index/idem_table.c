/* A linear-probing table of index records with backward-shift deletion (no tombstones). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "idem_table.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int gw_idem_table_init(struct gw_idem_table *t, size_t slots)
{
    assert(slots >= 8 && (slots & (slots - 1)) == 0);
    /* A mapping of its own: zero pages until a record lands on them (O(1) now), returned whole
     * when freed. calloc does so only for its first large block: once one is freed, glibc
     * raises its mmap threshold past the table's size, and every later table came from the heap,
     * zeroed at once and never given back (docs/decisions.md §16). */
    void *p = mmap(NULL, slots * sizeof(*t->slots), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -ENOMEM;
    t->slots = p;
    t->mask = slots - 1;
    t->count = 0;
    return 0;
}

void gw_idem_table_free(struct gw_idem_table *t)
{
    if (t->slots)
        munmap(t->slots, (t->mask + 1) * sizeof(*t->slots));
    memset(t, 0, sizeof(*t));
}

int gw_idem_table_full(const struct gw_idem_table *t)
{
    return t->count >= (t->mask + 1) / 4 * 3;
}

static size_t home_of(const struct gw_idem_table *t, struct gw_idem_key key)
{
    return (size_t)key.lo & t->mask;
}

struct gw_idem_rec *gw_idem_table_find(const struct gw_idem_table *t, struct gw_idem_key key)
{
    for (size_t i = home_of(t, key);; i = (i + 1) & t->mask) {
        struct gw_idem_rec *r = &t->slots[i];
        if (!(r->flags & GW_IDEM_REC_USED))
            return NULL;
        if (gw_idem_key_eq(r->key, key))
            return r;
    }
}

void gw_idem_table_add(struct gw_idem_table *t, const struct gw_idem_rec *rec)
{
    assert(!gw_idem_table_full(t));
    size_t i = home_of(t, rec->key);
    while (t->slots[i].flags & GW_IDEM_REC_USED) {
        assert(!gw_idem_key_eq(t->slots[i].key, rec->key));
        i = (i + 1) & t->mask;
    }
    t->slots[i] = *rec;
    t->slots[i].flags = GW_IDEM_REC_USED;
    t->count++;
}

/* 1 when the record at `home` may move to `hole` (hole lies cyclically in [home, at)). */
static int may_fill(size_t home, size_t hole, size_t at, size_t mask)
{
    return ((at - home) & mask) >= ((at - hole) & mask);
}

void gw_idem_table_remove(struct gw_idem_table *t, struct gw_idem_rec *slot)
{
    size_t hole = (size_t)(slot - t->slots);
    assert(hole <= t->mask && (slot->flags & GW_IDEM_REC_USED));
    for (size_t i = (hole + 1) & t->mask; t->slots[i].flags & GW_IDEM_REC_USED;
         i = (i + 1) & t->mask) {
        if (may_fill(home_of(t, t->slots[i].key), hole, i, t->mask)) {
            t->slots[hole] = t->slots[i];
            hole = i;
        }
    }
    memset(&t->slots[hole], 0, sizeof(t->slots[hole]));
    t->count--;
}

int gw_idem_table_grow(struct gw_idem_table *t)
{
    struct gw_idem_table bigger;
    if (gw_idem_table_init(&bigger, 2 * (t->mask + 1)) != 0)
        return -ENOMEM;
    for (size_t i = 0; i <= t->mask; i++)
        if (t->slots[i].flags & GW_IDEM_REC_USED)
            gw_idem_table_add(&bigger, &t->slots[i]);
    gw_idem_table_free(t);
    *t = bigger;
    return 0;
}
