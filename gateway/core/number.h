/* The one parser of unsigned integer text: command-line options and HTTP header values. */
#ifndef SHARDGATE_GW_NUMBER_H
#define SHARDGATE_GW_NUMBER_H

#include <stdint.h>

/* Parses a decimal unsigned integer in min..max with nothing around it (no sign, no spaces).
 * Returns 0, or -EINVAL (the caller words the message: it knows the option or header). */
int gw_parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *out);

/* Parses a duration: a decimal integer and a unit, ms, s, m, h or d ("30d", "12h", "90s",
 * "500ms"), into milliseconds in min_ms..max_ms. Returns 0 or -EINVAL. */
int gw_parse_duration_ms(const char *text, uint64_t min_ms, uint64_t max_ms, uint64_t *out);

#endif
