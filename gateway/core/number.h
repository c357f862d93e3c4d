/* The one parser of number text: command-line options, query parameters and header values. */
#ifndef SHARDGATE_GW_NUMBER_H
#define SHARDGATE_GW_NUMBER_H

#include <stdint.h>

/* Parses a decimal unsigned integer in min..max with nothing around it (no sign, no spaces).
 * Returns 0, or -EINVAL (the caller words the message: it knows the option or header). */
int gw_parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *out);

/* Parses a duration: a decimal integer and a unit, ms, s, m, h or d ("30d", "12h", "90s",
 * "500ms"), into milliseconds in min_ms..max_ms. Returns 0 or -EINVAL. */
int gw_parse_duration_ms(const char *text, uint64_t min_ms, uint64_t max_ms, uint64_t *out);

/* Parses a fraction 0..1 written as a plain decimal: "0" or "1", then optionally "." and 1 to
 * GW_FRACTION_DIGITS_MAX digits ("0.25", "1.0"); no sign, exponent, hex or spaces. Returns 0 or
 * -EINVAL. */
#define GW_FRACTION_DIGITS_MAX 17
int gw_parse_fraction(const char *text, double *out);

#endif
