/* Maglev's table from the paper's Listing 1, nothing of ring/ (docs/contract.md §11). */
/* permutation[i][j] = (offset_i + j * skip_i) mod size, taken as written; shard i takes its t-th
 * slot in the first round n with n * weight_i >= t * heaviest. */
#include "maglev.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"

struct hc_turn {
    const struct hc_maglev_shard *s;
    uint32_t index;  /* in the caller's list */
    uint64_t offset; /* permutation[i][0] */
    uint64_t skip;   /* 1 .. size - 1 */
    uint64_t j;      /* the next entry of its permutation to try */
    uint64_t taken;  /* slots it owns so far */
};

static int is_prime(uint32_t v)
{
    if (v < 2)
        return 0;
    for (uint64_t d = 2; d * d <= v; d++)
        if (v % d == 0)
            return 0;
    return 1;
}

static int id_order(const void *a, const void *b)
{
    const struct hc_maglev_shard *x = ((const struct hc_turn *)a)->s;
    const struct hc_maglev_shard *y = ((const struct hc_turn *)b)->s;
    size_t n = x->id_len < y->id_len ? x->id_len : y->id_len;
    int c = memcmp(x->id, y->id, n);
    return c ? c : (x->id_len > y->id_len) - (x->id_len < y->id_len);
}

static uint64_t le64(const unsigned char *d)
{
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--)
        v = v << 8 | d[k];
    return v;
}

static int permutations(struct hc_turn *t, size_t n, uint32_t size, const char *digest,
                        struct hc_err *err)
{
    struct hc_digest *d = NULL;
    int rc = hc_digest_open(digest, &d, err);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        unsigned char out[HC_DIGEST_MAX];
        rc = hc_digest_once(d, t[i].s->id, t[i].s->id_len, out);
        if (rc != 0)
            rc = hc_err_set(err, -EIO, "maglev: cannot digest shard id");
        t[i].offset = le64(out) % size;
        t[i].skip = le64(out + 8) % (size - 1) + 1;
    }
    if (d)
        hc_digest_close(d);
    return rc;
}

/* Shard t's next free slot along its permutation. */
static uint32_t next_free(struct hc_turn *t, uint32_t size, const uint32_t *table)
{
    for (;;) {
        uint32_t slot = (uint32_t)((t->offset + t->j * t->skip) % size);
        t->j++;
        if (table[slot] == UINT32_MAX)
            return slot;
    }
}

int hc_maglev_table(const struct hc_maglev_shard *shards, size_t n, uint32_t size,
                    const char *digest, uint32_t *table, struct hc_err *err)
{
    if (n == 0 || n >= UINT32_MAX)
        return hc_err_set(err, -EINVAL, "maglev: no shard");
    if (size > 2147483647u || !is_prime(size))
        return hc_err_set(err, -EINVAL, "maglev: table size %u is not a prime below 2^31", size);
    struct hc_turn *t = calloc(n, sizeof(*t));
    if (!t)
        return hc_err_set(err, -ENOMEM, "maglev: out of memory");
    uint64_t heaviest = 0;
    for (size_t i = 0; i < n; i++) {
        t[i].s = &shards[i];
        t[i].index = (uint32_t)i;
        if (shards[i].weight > heaviest)
            heaviest = shards[i].weight;
    }
    int rc = 0;
    qsort(t, n, sizeof(*t), id_order);
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (t[i].s->weight == 0)
            rc = hc_err_set(err, -EINVAL, "maglev: shard %zu has weight 0", (size_t)t[i].index);
        else if (i > 0 && id_order(&t[i - 1], &t[i]) == 0)
            rc = hc_err_set(err, -EINVAL, "maglev: a shard id twice");
    rc = rc ? rc : permutations(t, n, size, digest, err);
    if (rc == 0) {
        for (uint32_t s = 0; s < size; s++)
            table[s] = UINT32_MAX;
        uint64_t filled = 0;
        for (uint64_t round = 1; filled < size; round++)
            for (size_t i = 0; i < n && filled < size; i++)
                if (round * t[i].s->weight >= t[i].taken * heaviest) {
                    table[next_free(&t[i], size, table)] = t[i].index;
                    t[i].taken++;
                    filled++;
                }
    }
    free(t);
    return rc;
}
