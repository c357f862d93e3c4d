/* An open-addressing table of index records keyed by their 128-bit key (linear probing). The
 * table never rehashes by itself: the index freezes a full one and starts a fresh one
 * (docs/decisions.md §15); only the small in-flight set grows, by gw_idem_table_grow. */
#ifndef SHARDGATE_GW_IDEM_TABLE_H
#define SHARDGATE_GW_IDEM_TABLE_H

#include <stddef.h>

#include "idem_rec.h"

struct gw_idem_table {
    struct gw_idem_rec *slots;
    size_t mask; /* slots - 1, a power of two minus one */
    size_t count;
};

/* Allocates `slots` (a power of two >= 8) zeroed slots. Returns 0 or -ENOMEM. */
int gw_idem_table_init(struct gw_idem_table *t, size_t slots);
void gw_idem_table_free(struct gw_idem_table *t);

/* 1 when no more records fit within the load limit (3/4). */
int gw_idem_table_full(const struct gw_idem_table *t);

/* The slot holding `key`, or NULL. */
struct gw_idem_rec *gw_idem_table_find(const struct gw_idem_table *t, struct gw_idem_key key);

/* Adds `rec` (its key absent; the table not full). */
void gw_idem_table_add(struct gw_idem_table *t, const struct gw_idem_rec *rec);

/* Removes the record at `slot` (from gw_idem_table_find), keeping every probe chain whole. */
void gw_idem_table_remove(struct gw_idem_table *t, struct gw_idem_rec *slot);

/* Doubles the slots. Returns 0 or -ENOMEM (the table unchanged). */
int gw_idem_table_grow(struct gw_idem_table *t);

#endif
