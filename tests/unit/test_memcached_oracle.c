/* libmemcached as an independent oracle: in md5 mode at 160 points per shard, our placements
 * equal memcached_generate_hash() under MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED (docs/contract.md §3).
 * No memcached server is involved: libmemcached never connects to compute a placement. */
#include <libmemcached/memcached.h>
#include <stdlib.h>

#include "check.h"
#include "ring.h"

#define KEYS 25000

static void shard_name(char *out, size_t cap, size_t i)
{
    snprintf(out, cap, "cache-%03u.example", (unsigned)i);
}

/* Returns how many of KEYS keys land on the same shard in both; prints the first mismatch. */
static size_t agreeing_keys(size_t nshards)
{
    memcached_st *mc = memcached_create(NULL);
    memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1);
    char(*ids)[32] = calloc(nshards, 32);
    struct ring_shard *shards = calloc(nshards, sizeof(*shards));
    for (size_t i = 0; i < nshards; i++) {
        shard_name(ids[i], 32, i);
        shards[i] = (struct ring_shard){ids[i], strlen(ids[i]), 1};
        if (memcached_server_add(mc, ids[i], 11211) != MEMCACHED_SUCCESS)
            fprintf(stderr, "memcached_server_add %s failed\n", ids[i]);
    }
    struct ring *ring;
    struct ring_error err;
    if (ring_build(&ring, RING_MD5, 160, shards, nshards, &err) != 0) {
        fprintf(stderr, "ring_build: %s\n", err.msg);
        exit(2);
    }
    size_t same = 0;
    for (size_t k = 0; k < KEYS; k++) {
        char key[40];
        int len = snprintf(key, sizeof(key), "user:%zu:%zx", k, k * 2654435761u);
        uint32_t idx = memcached_generate_hash(mc, key, (size_t)len);
        const char *theirs = memcached_server_name(memcached_server_instance_by_position(mc, idx));
        struct ring_placement p;
        ring_lookup(ring, key, (size_t)len, &p);
        const char *ours = ring_shard_id(ring, p.shard);
        if (strcmp(theirs, ours) == 0)
            same++;
        else if (k - same == 0) /* the first disagreement */
            fprintf(stderr, "%zu shards, key %s: libmemcached %s, shardgate %s\n", nshards, key,
                    theirs, ours);
    }
    ring_free(ring);
    memcached_free(mc);
    free(ids);
    free(shards);
    return same;
}

int main(void)
{
    static const size_t sizes[] = {3, 10, 99};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t same = agreeing_keys(sizes[i]);
        printf("%zu shards: %zu of %d keys agree\n", sizes[i], same, KEYS);
        CHECK_EQ_U64(same, KEYS);
    }
    /* At 25 servers libmemcached's float weight formula gives 156 points each, so the two
     * part ways there: proof that this oracle compares real rings, not a shared shortcut. */
    size_t same = agreeing_keys(25);
    printf("25 shards (libmemcached: 156 points each): %zu of %d keys agree\n", same, KEYS);
    CHECK_TRUE(same < KEYS && same > KEYS * 9 / 10);
    return CHECK_DONE();
}
