/* 64-bit FNV-1a: change ids in a batch, batch ids in the idempotency table. */
#include "fnv.h"

uint64_t gw_fnv1a(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}
