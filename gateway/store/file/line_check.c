/* Line checksums (docs/journal.md §2.1): CRC-32 as zlib computes it (docs/decisions.md §10),
 * by ISA-L's carry-less multiply; zlib combines a receipt's with its record prefix's. */
#include "line_check.h"

#include <errno.h>
#include <isa-l/crc.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#define MEMBER ",\"crc32\":\""
#define MEMBER_LEN (sizeof(MEMBER) - 1)

unsigned long gw_record_crc(const char *p, size_t n)
{
    return crc32_gzip_refl(0, (const unsigned char *)p, n);
}

/* Appends the checksum member with `crc`, '}' and a newline. */
static void put_member(struct gw_buf *out, unsigned long crc)
{
    char tail[GW_RECORD_TAIL + 2];
    snprintf(tail, sizeof(tail), MEMBER "%08lx\"}\n", crc);
    gw_buf_append(out, tail, GW_RECORD_TAIL + 1);
}

void gw_record_end(struct gw_buf *out, size_t start)
{
    if (out->failed || out->len <= start || out->data[out->len - 1] != '}')
        return;
    out->len--; /* the record's closing brace */
    put_member(out, gw_record_crc(out->data + start, out->len - start));
}

void gw_record_close_around(struct gw_buf *out, size_t start, size_t tail_len,
                            unsigned long tail_crc)
{
    if (out->failed || out->len < start)
        return;
    size_t head = out->len - start;
    put_member(out,
               crc32_combine(gw_record_crc(out->data + start, head), tail_crc, (z_off_t)tail_len));
}

static int hex_value(const char *p, unsigned long *v)
{
    *v = 0;
    for (int i = 0; i < 8; i++) {
        char c = p[i];
        unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                                            : 16u;
        if (d == 16u)
            return -1;
        *v = *v << 4 | d;
    }
    return 0;
}

/* The checksum member at `tail` (GW_RECORD_TAIL bytes): its value, or -ENOMSG. */
static int member_value(const char *tail, unsigned long *want)
{
    if (memcmp(tail, MEMBER, MEMBER_LEN) != 0 || tail[MEMBER_LEN + 8] != '"' ||
        tail[MEMBER_LEN + 9] != '}' || hex_value(tail + MEMBER_LEN, want) != 0)
        return -ENOMSG;
    return 0;
}

int gw_record_check_tail(const char *tail, unsigned long crc)
{
    unsigned long want;
    if (member_value(tail, &want) != 0)
        return -ENOMSG;
    return crc == want ? 0 : -EBADMSG;
}

int gw_record_check(const char *line, size_t len, size_t *body)
{
    if (len < GW_RECORD_TAIL + 1)
        return -ENOMSG;
    *body = len - GW_RECORD_TAIL;
    return gw_record_check_tail(line + *body, gw_record_crc(line, *body));
}

int gw_record_epoch_checked(const char *tail, size_t n)
{
    if (n == GW_RECORD_TAIL && memcmp(tail, MEMBER, MEMBER_LEN) == 0)
        return 1;
    return n >= 2 && tail[n - 2] == '"' && tail[n - 1] == '}';
}

const char *gw_record_fault(int rc)
{
    return rc == -EBADMSG ? GW_RECORD_MISMATCH
                          : "no checksum: the line does not end with its crc32 member";
}
