/* Unsigned integer and fraction text, strictly (docs/decisions.md §28, docs/api.md §1.1). */
#include "number.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

int gw_parse_duration_ms(const char *text, uint64_t min_ms, uint64_t max_ms, uint64_t *out)
{
    static const struct {
        const char *unit;
        uint64_t ms;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}};
    size_t digits = strspn(text, "0123456789");
    char number[24];
    if (digits == 0 || digits >= sizeof(number))
        return -EINVAL;
    memcpy(number, text, digits);
    number[digits] = '\0';
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        uint64_t n;
        if (strcmp(text + digits, units[i].unit) != 0 ||
            gw_parse_u64(number, 0, UINT64_MAX / units[i].ms, &n) != 0)
            continue;
        if (n * units[i].ms < min_ms || n * units[i].ms > max_ms)
            return -EINVAL;
        *out = n * units[i].ms;
        return 0;
    }
    return -EINVAL;
}

int gw_parse_fraction(const char *text, double *out)
{
    if ((text[0] != '0' && text[0] != '1') || (text[1] != '\0' && text[1] != '.'))
        return -EINVAL;
    size_t digits = text[1] == '.' ? strspn(text + 2, "0123456789") : 0;
    if (text[1] == '.' && (digits == 0 || digits > GW_FRACTION_DIGITS_MAX || text[2 + digits]))
        return -EINVAL;
    double v = strtod(text, NULL);
    if (v > 1)
        return -EINVAL;
    *out = v;
    return 0;
}
