/* Unsigned integer text, strictly (docs/decisions.md §12). */
#include "number.h"

#include <errno.h>
#include <stdlib.h>

int gw_parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
    if (!text || *text < '0' || *text > '9')
        return -EINVAL;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end || v < min || v > max)
        return -EINVAL;
    *out = v;
    return 0;
}
