/* Jump consistent hash, written here from the paper and nothing of ring/ (docs/contract.md §10). */
#include "jump.h"

int32_t hc_jump(uint64_t key, int32_t buckets)
{
    const double two31 = 2147483648.0;
    int64_t bucket = -1;
    for (int64_t next = 0; next < (int64_t)buckets;) {
        bucket = next;
        key = key * UINT64_C(2862933555777941757) + 1;
        next = (int64_t)((double)(bucket + 1) * (two31 / (double)((key >> 33) + 1)));
    }
    return (int32_t)bucket;
}
