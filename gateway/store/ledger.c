/* Cumulative per-shard totals, added only once a receipt is durable. */
#include "ledger.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int gw_ledger_init(struct gw_ledger *l, size_t shards)
{
    memset(l, 0, sizeof(*l));
    l->totals = calloc(shards ? shards : 1, sizeof(*l->totals));
    if (!l->totals)
        return -ENOMEM;
    l->count = shards;
    pthread_mutex_init(&l->lock, NULL);
    return 0;
}

void gw_ledger_free(struct gw_ledger *l)
{
    if (!l->totals)
        return;
    free(l->totals);
    pthread_mutex_destroy(&l->lock);
    memset(l, 0, sizeof(*l));
}

void gw_ledger_add(struct gw_ledger *l, const struct gw_tally *tally)
{
    pthread_mutex_lock(&l->lock);
    for (size_t i = 0; i < l->count; i++) {
        l->totals[i].load += tally[i].load;
        l->totals[i].received += tally[i].received;
    }
    pthread_mutex_unlock(&l->lock);
}

void gw_ledger_add_one(struct gw_ledger *l, size_t shard, uint64_t load, uint64_t received)
{
    pthread_mutex_lock(&l->lock);
    l->totals[shard].load += load;
    l->totals[shard].received += received;
    pthread_mutex_unlock(&l->lock);
}

void gw_ledger_snapshot(struct gw_ledger *l, struct gw_total *out)
{
    pthread_mutex_lock(&l->lock);
    memcpy(out, l->totals, l->count * sizeof(*out));
    pthread_mutex_unlock(&l->lock);
}
