/* The layout of a run file (docs/journal.md §9), shared by its writer (idem_run.c) and its
 * reader (idem_run_read.c). Not for other callers. */
#ifndef SHARDGATE_GW_IDEM_RUN_FILE_H
#define SHARDGATE_GW_IDEM_RUN_FILE_H

#include <openssl/sha.h>
#include <stddef.h>
#include <stdint.h>

#include "idem_bloom.h"
#include "idem_rec.h"

#define GW_IDEM_RUN_BLOCK 16384u /* a multiple of 64: no record or filter block straddles two */
#define RUN_MAGIC "SGIDXRUN"
#define RUN_VERSION 3u /* 2: the Bloom filter after the records; 3: the block digests last */

struct run_header {
    char magic[8];
    uint32_t version;
    uint32_t rec_size;
    uint64_t count;
    uint64_t bloom_blocks; /* gw_idem_bloom_blocks(count) */
    uint64_t reserved[4];
};
_Static_assert(sizeof(struct run_header) == sizeof(struct gw_idem_rec), "records stay aligned");
_Static_assert(GW_IDEM_RUN_BLOCK % sizeof(struct gw_idem_rec) == 0, "no record straddles blocks");

/* Bytes of the records and the filter of `count` keys. */
static inline size_t gw_idem__run_payload(uint64_t count)
{
    return (size_t)count * sizeof(struct gw_idem_rec) + gw_idem_bloom_blocks(count) * 64;
}

/* Blocks of a payload of `payload` bytes (the last one may be short). */
static inline size_t gw_idem__run_blocks(size_t payload)
{
    return (payload + GW_IDEM_RUN_BLOCK - 1) / GW_IDEM_RUN_BLOCK;
}

#endif
