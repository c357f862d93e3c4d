/* The blocked Bloom filter of a run (docs/journal.md §9). Keys are uniform SHA-256 prefixes, so
 * their bits are used directly: the low half picks the block, the high half gives 7 bit
 * positions of 9 bits each inside it. */
#include "idem_bloom.h"

#include <assert.h>

size_t gw_idem_bloom_blocks(uint64_t count)
{
    if (count == 0)
        return 0;
    return (size_t)((count * GW_IDEM_BLOOM_BITS_PER_KEY + 511) / 512);
}

size_t gw_idem_bloom_block_of(struct gw_idem_key key, size_t nblocks)
{
    return (size_t)(((unsigned __int128)key.lo * nblocks) >> 64);
}

void gw_idem_bloom_add(uint64_t *words, size_t nblocks, struct gw_idem_key key)
{
    assert(nblocks > 0);
    uint64_t *block = words + gw_idem_bloom_block_of(key, nblocks) * GW_IDEM_BLOOM_BLOCK_WORDS;
    uint64_t bits = key.hi;
    for (int i = 0; i < GW_IDEM_BLOOM_K; i++, bits >>= 9)
        block[(bits >> 6) & 7] |= 1ull << (bits & 63);
}

int gw_idem_bloom_may_contain(const uint64_t *words, size_t nblocks, struct gw_idem_key key)
{
    if (nblocks == 0)
        return 0;
    const uint64_t *block =
        words + gw_idem_bloom_block_of(key, nblocks) * GW_IDEM_BLOOM_BLOCK_WORDS;
    uint64_t bits = key.hi;
    for (int i = 0; i < GW_IDEM_BLOOM_K; i++, bits >>= 9)
        if (!(block[(bits >> 6) & 7] & (1ull << (bits & 63))))
            return 0;
    return 1;
}
