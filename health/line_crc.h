/* The crc32 member a journal line may end with (docs/journal.md §2.1). */
#ifndef SHARDGATE_HC_LINE_CRC_H
#define SHARDGATE_HC_LINE_CRC_H

#include <stddef.h>

#define HC_CRC_TAIL 20 /* ,"crc32":"<8 hex>"} */

enum hc_crc { HC_CRC_BAD = -1, HC_CRC_NONE = 0, HC_CRC_OK = 1 };

/* What the line p[0..n) (no newline) ends with: no crc32 member, one that is the CRC-32 of the
 * bytes before it, or one that is not. */
enum hc_crc hc_line_crc(const char *p, size_t n);

#endif
