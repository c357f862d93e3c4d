/* The health service's own Maglev table (docs/contract.md §11). */
#ifndef HC_MAGLEV_H
#define HC_MAGLEV_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct hc_maglev_shard {
    const char *id;
    size_t id_len;
    uint32_t weight;
};

/* The table of `n` shards (any order) with `size` slots, by the digest named `digest` ("SHA1"
 * or "MD5"): table[s] the index in `shards` of slot s's owner. Returns 0, or -EINVAL (no shard,
 * a weight 0, an id twice, a size not a prime below 2^31), -ENOMEM or -EIO, with err set. */
int hc_maglev_table(const struct hc_maglev_shard *shards, size_t n, uint32_t size,
                    const char *digest, uint32_t *table, struct hc_err *err);

#endif
