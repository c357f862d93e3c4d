/* The sums a checkpoint states: the ledger and the per-epoch totals, recomputed. */
/* docs/operations.md §1.6: the cumulative ledger by shard id and
 * the per-epoch per-shard totals, exact 128-bit, recomputed from the receipts health reads. */
#ifndef HC_TOTALS_H
#define HC_TOTALS_H

#include <stddef.h>
#include <stdint.h>

#include "membership.h"
#include "text.h"

struct hc_epoch;

struct hc_tot_shard {
    char id[HC_SHARD_ID_MAX + 1];
    size_t id_len;
    unsigned weight;  /* ledger: of the latest epoch that held the shard */
    int64_t capacity; /* ledger: idem */
    unsigned __int128 load, received;
};

struct hc_tot_list { /* kept in id order */
    struct hc_tot_shard *s;
    size_t n, cap;
};

struct hc_tot_epoch {
    int64_t epoch_seq;
    struct hc_tot_list shards;
};

struct hc_totals {
    struct hc_tot_list ledger;
    struct hc_tot_epoch *ep; /* in epoch_seq order */
    size_t n_ep, cap_ep;
};

/* An epoch record was read: every shard of its membership enters the ledger (weight and
 * capacity from this, the latest record holding it). Returns 0 or -ENOMEM. */
int hc_totals_epoch(struct hc_totals *t, const struct hc_membership *m);
/* A receipt placed load/received on shard id in the epoch epoch_seq. 0 or -ENOMEM. */
int hc_totals_add(struct hc_totals *t, int64_t epoch_seq, const char *id, size_t len, uint64_t load,
                  uint64_t received);
/* Appends `"epochs":[...],"ledger":[...],"totals":[...]` exactly as a checkpoint writes them
 * for the chain epochs[0..n) and these sums. Returns 0 or -ENOMEM. */
int hc_totals_render(const struct hc_totals *t, struct hc_epoch *const *epochs, size_t n,
                     struct hc_text *out);
void hc_totals_free(struct hc_totals *t);

#endif
