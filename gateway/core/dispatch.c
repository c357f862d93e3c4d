/* Dispatch: place, then tally per shard; `ok` is derived from the tallies, never assumed. */
#include "dispatch.h"

#include "spill.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int gw_dispatch_over_capacity(const struct gw_topology *t, const struct gw_dispatch *d, size_t i)
{
    return d->tally[i].load > t->members.shards[i].capacity;
}

static void tally(const struct gw_topology *t, const struct gw_batch *b, struct gw_dispatch *d)
{
    for (size_t i = 0; i < b->count; i++) {
        uint32_t m = d->member[i];
        d->tally[m].load += b->changes[i].size;
        d->tally[m].received++;
        if (t->members.shards[m].state == GW_STATE_ONLINE)
            d->dispatched++;
    }
    for (size_t m = 0; m < t->members.count; m++)
        d->over_capacity_shards += (size_t)gw_dispatch_over_capacity(t, d, m);
    d->ok = d->dispatched == b->count && d->over_capacity_shards == 0;
}

/* Places a chunk of keys at once (ring_lookup_keys): the ring's cache misses, or the table's,
 * of neighbouring keys overlap, which on large rings costs a third of one-by-one lookups. */
static void place(const struct gw_topology *t, const struct gw_batch *b, struct gw_dispatch *d)
{
    enum { CHUNK = 256 };
    const char *key[CHUNK];
    size_t len[CHUNK];
    for (size_t at = 0; at < b->count; at += CHUNK) {
        size_t n = b->count - at < CHUNK ? b->count - at : CHUNK;
        for (size_t i = 0; i < n; i++) {
            key[i] = b->changes[at + i].key;
            len[i] = b->changes[at + i].key_len;
        }
        ring_lookup_keys(t->ring, key, len, n, d->placements + at);
        for (size_t i = at; i < at + n; i++)
            d->member[i] = t->member_of[d->placements[i].shard];
    }
}

/* Rules 1-3 of docs/contract.md §9 over the home placements, in batch order. */
static int place_spill(const struct gw_topology *t, const struct gw_batch *b, struct gw_dispatch *d)
{
    struct gw_spill w;
    if (gw_spill_init(&w, t) != 0)
        return -ENOMEM;
    for (size_t i = 0; i < b->count; i++) {
        int rc = gw_spill_place(&w, &d->placements[i], b->changes[i].size, &d->home[i]);
        if (rc < 0) {
            gw_spill_free(&w);
            return rc;
        }
        if (rc == 1) {
            d->member[i] = t->member_of[d->placements[i].shard];
            d->spilled++;
        }
    }
    gw_spill_free(&w);
    return 0;
}

int gw_dispatch_run(const struct gw_topology *t, const struct gw_batch *b, struct gw_dispatch *out,
                    struct gw_error *err)
{
    memset(out, 0, sizeof(*out));
    if (ring_shard_count(t->ring) == 0) {
        gw_error_set(err, "", "no online shard: the ring is empty and cannot place changes");
        return -ENOENT;
    }
    size_t n = t->members.count;
    out->placements = malloc(b->count * sizeof(*out->placements));
    out->member = malloc(b->count * sizeof(*out->member));
    out->tally = calloc(n ? n : 1, sizeof(*out->tally));
    int spill = t->contract.policy == GW_POLICY_SPILL;
    if (spill)
        out->home = malloc((b->count ? b->count : 1) * sizeof(*out->home));
    if (!out->placements || !out->member || !out->tally || (spill && !out->home)) {
        gw_dispatch_free(out);
        gw_error_set(err, "", "out of memory");
        return -ENOMEM;
    }
    place(t, b, out);
    if (spill && place_spill(t, b, out) != 0) {
        gw_dispatch_free(out);
        gw_error_set(err, "", "out of memory");
        return -ENOMEM;
    }
    tally(t, b, out);
    return 0;
}

void gw_dispatch_free(struct gw_dispatch *d)
{
    free(d->placements);
    free(d->member);
    free(d->tally);
    free(d->home);
    memset(d, 0, sizeof(*d));
}
