/* The health service's own jump consistent hash (docs/contract.md §10). */
#ifndef HC_JUMP_H
#define HC_JUMP_H

#include <stdint.h>

/* The bucket in [0, buckets) of the 64-bit key (Lamping and Veach), or -1 for no bucket. */
int32_t hc_jump(uint64_t key, int32_t buckets);

#endif
