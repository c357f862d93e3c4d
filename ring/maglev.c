/* The Maglev lookup table (Eisenbud et al., NSDI 2016; docs/contract.md §11), weighted as Envoy
 * weights it: each shard's permutation of the slots from the digest of its id, and a turn in
 * each round for a shard while its weight keeps up with the heaviest's. The shards are taken in
 * id order, so the table does not depend on how they are listed, and a shard's next slot is one
 * addition past its last, with no modulo in the loop that fills the table. */
#include "ring_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* A shard while the table fills: where its permutation stands, and its turns. */
struct maglev_entry {
    const char *id;
    size_t id_len;
    uint32_t shard; /* its index in the caller's list */
    uint32_t next;  /* the slot its permutation offers next */
    uint32_t skip;
    uint32_t weight;
    uint64_t target; /* it takes a turn in round n while n * weight >= target */
};

int ring_maglev_prime(uint32_t m)
{
    if (m < 2)
        return 0;
    for (uint32_t d = 2; (uint64_t)d * d <= m; d++)
        if (m % d == 0)
            return 0;
    return 1;
}

static int by_id(const void *a, const void *b)
{
    const struct maglev_entry *x = a, *y = b;
    return ring__id_compare(x->id, x->id_len, y->id, y->id_len);
}

/* Each shard's offset and skip from the digest of its id: bytes 0..7 and 8..15, LE64. */
static void permutation(enum ring_digest digest, const struct ring_shard *s, uint32_t m,
                        struct maglev_entry *e)
{
    uint32_t w[5];
    ring__digest_words(digest, s->id, s->id_len, w);
    uint64_t offset = (uint64_t)w[0] | (uint64_t)w[1] << 32;
    uint64_t skip = (uint64_t)w[2] | (uint64_t)w[3] << 32;
    e->next = (uint32_t)(offset % m);
    e->skip = (uint32_t)(skip % (m - 1) + 1);
    e->weight = s->weight;
    e->target = 0;
}

/* Takes the first slot of e's permutation not yet taken. The probes read `taken`, a bit a
 * slot (125 KiB at a million slots, held in the core's cache), not the table. */
static void take_slot(struct maglev_entry *e, uint32_t m, uint64_t *taken, uint32_t *table)
{
    uint32_t c = e->next;
    while (taken[c >> 6] >> (c & 63) & 1) {
        c += e->skip;
        if (c >= m)
            c -= m;
    }
    taken[c >> 6] |= UINT64_C(1) << (c & 63);
    table[c] = e->shard;
    c += e->skip;
    e->next = c >= m ? c - m : c;
}

static void fill(struct maglev_entry *e, size_t n, uint32_t m, uint64_t *taken, uint32_t *table)
{
    uint32_t heaviest = 0;
    for (size_t i = 0; i < n; i++)
        if (e[i].weight > heaviest)
            heaviest = e[i].weight;
    uint32_t filled = 0;
    for (uint64_t round = 1; filled < m; round++)
        for (size_t i = 0; i < n && filled < m; i++) {
            if (round * e[i].weight < e[i].target)
                continue;
            e[i].target += heaviest;
            take_slot(&e[i], m, taken, table);
            filled++;
        }
}

int ring_maglev_table(const struct ring_shard *shards, size_t n, uint32_t m,
                      enum ring_digest digest, uint32_t *table)
{
    if (n == 0 || n >= UINT32_MAX || m > INT32_MAX || !ring_maglev_prime(m))
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (shards[i].weight == 0)
            return -EINVAL;
    struct maglev_entry *e = malloc(n * sizeof(*e));
    uint64_t *taken = calloc(m / 64 + 1, sizeof(*taken));
    if (!e || !taken) {
        free(e);
        free(taken);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        e[i] = (struct maglev_entry){
            .id = shards[i].id, .id_len = shards[i].id_len, .shard = (uint32_t)i};
    qsort(e, n, sizeof(*e), by_id);
    for (size_t i = 1; i < n; i++)
        if (by_id(&e[i - 1], &e[i]) == 0) {
            free(e);
            free(taken);
            return -EINVAL; /* one id twice */
        }
    for (size_t i = 0; i < n; i++)
        permutation(digest, &shards[e[i].shard], m, &e[i]);
    fill(e, n, m, taken, table);
    free(e);
    free(taken);
    return 0;
}

int ring_build_maglev(struct ring **out, enum ring_digest digest, uint32_t table_size,
                      const struct ring_shard *shards, size_t n, struct ring_error *err)
{
    *out = NULL;
    if (table_size > RING_MAGLEV_TABLE_MAX || !ring_maglev_prime(table_size) || n > table_size) {
        snprintf(err->msg, sizeof(err->msg), "table size %u is not a prime %zu..%d", table_size,
                 n > 2 ? n : 2, RING_MAGLEV_TABLE_MAX);
        return -EINVAL;
    }
    struct ring *ring = ring__new(RING_MAGLEV, digest, err);
    if (!ring)
        return -ENOMEM;
    ring->table_size = table_size;
    int rc = ring__copy_shards(ring, shards, n, err);
    if (rc == 0 && n > 0) {
        /* The table over the shards in id order, so that it holds ring shard indexes. */
        struct ring_shard *sorted = malloc(n * sizeof(*sorted));
        ring->table = malloc((size_t)table_size * sizeof(*ring->table));
        rc = sorted && ring->table ? 0 : -ENOMEM;
        for (size_t i = 0; rc == 0 && i < n; i++)
            sorted[i] = (struct ring_shard){ring->shards[i].id, ring->shards[i].id_len,
                                            ring->shards[i].weight};
        if (rc == 0)
            rc = ring_maglev_table(sorted, n, table_size, digest, ring->table);
        free(sorted);
    }
    return ring__finish(ring, rc, out, err);
}
