/* Jump consistent hash (Lamping and Veach, 2014; docs/contract.md §10): the bucket of a 64-bit
 * key among `buckets`, with no memory, moving 1/n of the keys when a bucket is added at the end.
 * The floating-point step is the paper's: (b + 1) * 2^31 / ((key >> 33) + 1) in double. A jump
 * ring places keys on a fixed number of slots by it, and the slots on shards by a table drawn
 * from a ketama ring, so that weights count and any shard may leave. */
#include "ring_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int32_t ring_jump(uint64_t key, int32_t buckets)
{
    int64_t b = -1, j = 0;
    while (j < buckets) {
        b = j;
        key = key * 2862933555777941757ULL + 1;
        j = (int64_t)((double)(b + 1) * ((double)(1LL << 31) / (double)((key >> 33) + 1)));
    }
    return (int32_t)b;
}

/* The owner of each slot: slot s starts at hash value floor(s * 2^32 / slots), and belongs to
 * the first point at or after it, or to point 0 past the last (docs/contract.md §3, §10). One
 * pass over the slots and the points together, both ascending. */
static void draw_table(const struct ring *ketama, uint32_t slots, uint32_t *table)
{
    const struct ring_point *points = ring_points(ketama);
    size_t n = ring_points_total(ketama), i = 0;
    for (uint32_t s = 0; s < slots; s++) {
        uint32_t start = (uint32_t)(((uint64_t)s << 32) / slots);
        while (i < n && points[i].value < start)
            i++;
        table[s] = points[i < n ? i : 0].shard;
    }
}

int ring_build_jump(struct ring **out, enum ring_digest digest, uint32_t slots,
                    const struct ring_shard *shards, size_t n, struct ring_error *err)
{
    return ring_build_jump_from(out, NULL, digest, slots, shards, n, err);
}

int ring_build_jump_from(struct ring **out, const struct ring *prev, enum ring_digest digest,
                         uint32_t slots, const struct ring_shard *shards, size_t n,
                         struct ring_error *err)
{
    *out = NULL;
    if (slots < 1 || slots > RING_JUMP_SLOTS_MAX) {
        snprintf(err->msg, sizeof(err->msg), "slots %u is not 1..%d", slots, RING_JUMP_SLOTS_MAX);
        return -EINVAL;
    }
    struct ring *ketama = NULL;
    const struct ring *under = prev && prev->algorithm == RING_JUMP ? prev->under : NULL;
    int rc = ring_build_from(&ketama, under, digest, RING_JUMP_VNODES, shards, n, err);
    if (rc != 0)
        return rc;
    struct ring *ring = ring__new(RING_JUMP, digest, err);
    if (!ring) {
        ring_free(ketama);
        return -ENOMEM;
    }
    ring->table_size = slots;
    rc = ring__copy_shards(ring, shards, n, err);
    if (rc == 0 && n > 0) {
        /* Both rings hold their shards in id order, so the ketama ring's shard indexes are
         * this ring's. */
        ring->table = malloc((size_t)slots * sizeof(*ring->table));
        if (ring->table)
            draw_table(ketama, slots, ring->table);
        else
            rc = -ENOMEM;
    }
    ring->under = ketama;
    return ring__finish(ring, rc, out, err);
}
