/* The blocked Bloom filter of a run (docs/journal.md §9): one 64-byte block per key, 7 bits set
 * in it, about 10 bits per key, so a lookup of an absent id reads one cache line and no record
 * page in the common case. */
#ifndef SHARDGATE_GW_IDEM_BLOOM_H
#define SHARDGATE_GW_IDEM_BLOOM_H

#include <stddef.h>
#include <stdint.h>

#include "idem_rec.h"

#define GW_IDEM_BLOOM_BLOCK_WORDS 8 /* 64 bytes, 512 bits */
#define GW_IDEM_BLOOM_BITS_PER_KEY 10
#define GW_IDEM_BLOOM_K 7

/* The number of 64-byte blocks of the filter of `count` keys (1 at least when count > 0). */
size_t gw_idem_bloom_blocks(uint64_t count);

/* The block (0 .. nblocks-1) holding the bits of `key`; nblocks > 0. */
size_t gw_idem_bloom_block_of(struct gw_idem_key key, size_t nblocks);

/* Sets the bits of `key` in `words` (nblocks blocks). */
void gw_idem_bloom_add(uint64_t *words, size_t nblocks, struct gw_idem_key key);

/* 0 when `key` was certainly never added; 1 when it may have been. */
int gw_idem_bloom_may_contain(const uint64_t *words, size_t nblocks, struct gw_idem_key key);

#endif
