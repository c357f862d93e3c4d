/* The checksum every journal line carries (docs/journal.md §2.1): how a record's line ends,
 * and the check a reader makes before it trusts a byte of it. */
#ifndef SHARDGATE_GW_LINE_CHECK_H
#define SHARDGATE_GW_LINE_CHECK_H

#include <stddef.h>

#include "buf.h"

/* The bytes a checked line ends with, newline excluded: ,"crc32":"<8 lowercase hex>"} */
#define GW_RECORD_TAIL 20

/* Ends the record that starts at out->data[start] and ends with its closing '}': the '}'
 * becomes the checksum member, then '}' and a newline. A failed buffer stays failed. */
void gw_record_end(struct gw_buf *out, size_t start);

/* The CRC-32 of p[0..n), as the checksum member has it. */
unsigned long gw_record_crc(const char *p, size_t n);

/* Ends a record whose bytes are out->data[start..] and then `tail_len` bytes written elsewhere
 * (a receipt in its request's buffer) whose CRC is `tail_crc` (gw_record_crc): appends the
 * checksum member of them all, '}' and a newline, reading only the bytes in `out`. */
void gw_record_close_around(struct gw_buf *out, size_t start, size_t tail_len,
                            unsigned long tail_crc);

/* Checks a line (without its newline) of a segment written with checksums. Returns 0 with
 * *body = len - GW_RECORD_TAIL (the record is line[0..*body) and a '}'); -ENOMSG when the line
 * does not end with a checksum member; -EBADMSG when its checksum is not that of its bytes. */
int gw_record_check(const char *line, size_t len, size_t *body);

/* The same check for a line read in pieces: `tail` is its last GW_RECORD_TAIL bytes and `crc`
 * the CRC-32 of every byte before them. */
int gw_record_check_tail(const char *tail, unsigned long crc);

/* 1 when an epoch record line whose last n bytes (n <= GW_RECORD_TAIL) are `tail` was written
 * with a checksum: the tail has the member's place, or the line ends with '"}' as such a line
 * does (a record without one ends with the shards array, ']}'). One damaged byte cannot make a
 * checked line look unchecked. */
int gw_record_epoch_checked(const char *tail, size_t n);

#define GW_RECORD_MISMATCH "checksum mismatch: the line's crc32 is not that of its bytes"

/* The message for a failed check: "no checksum" or "checksum mismatch". */
const char *gw_record_fault(int rc);

#endif
