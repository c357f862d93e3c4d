/* Line checksums, read independently of the gateway: the tail, then zlib's CRC-32 before it. */
#include "line_crc.h"

#include <string.h>
#include <zlib.h>

static const char hc_crc_key[] = ",\"crc32\":\"";

static int hc_crc_hex(const char *p, unsigned long *out)
{
    unsigned long v = 0;
    for (int i = 0; i < 8; i++) {
        const char *digits = "0123456789abcdef";
        const char *d = p[i] ? strchr(digits, p[i]) : NULL;
        if (d == NULL)
            return -1;
        v = v * 16 + (unsigned long)(d - digits);
    }
    *out = v;
    return 0;
}

enum hc_crc hc_line_crc(const char *p, size_t n)
{
    const size_t key = sizeof hc_crc_key - 1;
    unsigned long stated;
    if (n <= HC_CRC_TAIL)
        return HC_CRC_NONE;
    const char *t = p + n - HC_CRC_TAIL;
    if (memcmp(t, hc_crc_key, key) != 0 || hc_crc_hex(t + key, &stated) != 0 || t[key + 8] != '"' ||
        t[key + 9] != '}')
        return HC_CRC_NONE;
    unsigned long crc = crc32(0L, Z_NULL, 0);
    for (size_t at = 0, body = n - HC_CRC_TAIL; at < body;) {
        uInt step = body - at > (1u << 30) ? (1u << 30) : (uInt)(body - at);
        crc = crc32(crc, (const Bytef *)p + at, step);
        at += step;
    }
    return crc == stated ? HC_CRC_OK : HC_CRC_BAD;
}
