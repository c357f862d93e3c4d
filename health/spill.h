/* The spill policy (docs/contract.md §9) replayed by the health service, with its own walk. */
#ifndef HC_SPILL_H
#define HC_SPILL_H

#include <stddef.h>
#include <stdint.h>

#include "membership.h"
#include "receipt.h"
#include "ring.h"

/* Scratch of one replay, reused from receipt to receipt (sized by hc_spill_reserve). */
struct hc_spill {
    uint64_t *load; /* per membership shard: the load so far in this batch */
    uint64_t *seen; /* per membership shard: the walk that last met it */
    uint32_t *next; /* per ring point + 1: union-find, "next point whose shard is not full" */
    uint64_t walks; /* walk counter, for `seen` */
    size_t cap_sh, cap_pt;
};

/* Sizes the scratch for m shards and n points. Returns 0 or -ENOMEM. */
int hc_spill_reserve(struct hc_spill *s, size_t m, size_t n);
void hc_spill_free(struct hc_spill *s);

/* Replays the receipt's changes in order under rules 1-3: hit[] holds each change's home
 * placement on entry and its final one on return; home[i] is the membership index of the
 * home shard of a spilled placement, -1 otherwise. Returns the number spilled. The ring must
 * not be empty. */
uint64_t hc_spill_replay(struct hc_spill *s, const struct hc_ring *ring,
                         const struct hc_membership *m, const struct hc_receipt *r,
                         const uint32_t *hash, struct hc_hit *hit, long *home);

#endif
