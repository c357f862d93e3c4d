/* Jump consistent hash (Lamping and Veach, 2014; docs/contract.md §10): the bucket of a 64-bit
 * key among `buckets`, with no memory, moving 1/n of the keys when a bucket is added at the end.
 * The floating-point step is the paper's: (b + 1) * 2^31 / ((key >> 33) + 1) in double. */
#include "ring.h"

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
