/* The one parser of unsigned integer text: command-line options and HTTP header values. */
#ifndef SHARDGATE_GW_NUMBER_H
#define SHARDGATE_GW_NUMBER_H

#include <stdint.h>

/* Parses a decimal unsigned integer in min..max with nothing around it (no sign, no spaces).
 * Returns 0, or -EINVAL (the caller words the message: it knows the option or header). */
int gw_parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *out);

#endif
