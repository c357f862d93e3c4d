/* Segment names and the header and seal lines (docs/journal.md §6), compact and byte-exact. */
#include "segment.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "number.h"
#include "line_check.h"

#define SHORT_LINE_MAX 256 /* a header or seal record: far shorter */

void gw_segment_name(char out[GW_SEGMENT_NAME_MAX], uint64_t first_seq)
{
    snprintf(out, GW_SEGMENT_NAME_MAX, "journal-%020" PRIu64 ".jsonl", first_seq);
}

int gw_segment_parse_name(const char *name, uint64_t *first_seq)
{
    static const char pre[] = "journal-", suf[] = ".jsonl";
    size_t n = strlen(name);
    if (n != sizeof(pre) - 1 + 20 + sizeof(suf) - 1 || strncmp(name, pre, sizeof(pre) - 1) != 0 ||
        strcmp(name + n - (sizeof(suf) - 1), suf) != 0)
        return -EINVAL;
    const char *d = name + sizeof(pre) - 1;
    uint64_t v = 0;
    for (int i = 0; i < 20; i++) {
        if (d[i] < '0' || d[i] > '9' || v > (UINT64_MAX - (uint64_t)(d[i] - '0')) / 10)
            return -EINVAL;
        v = v * 10 + (uint64_t)(d[i] - '0');
    }
    if (v == 0)
        return -EINVAL;
    *first_seq = v;
    char canon[GW_SEGMENT_NAME_MAX];
    gw_segment_name(canon, *first_seq);
    return strcmp(canon, name) == 0 ? 0 : -EINVAL;
}

void gw_segment_header_line(struct gw_buf *out, uint64_t first_seq, const char *prev)
{
    size_t start = out->len;
    gw_buf_field_u64(out, "{\"type\":\"segment\",\"first_seq\":", first_seq);
    gw_buf_puts(out, ",\"prev\":\"");
    gw_buf_puts(out, prev);
    gw_buf_puts(out, "\"}");
    gw_record_end(out, start);
}

void gw_sha256_hex(const void *data, size_t len, char out[GW_SHA256_HEX + 1])
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    EVP_Digest(data, len, d, &n, EVP_sha256(), NULL);
    gw_hex_encode(d, n < GW_SHA256_HEX / 2 ? n : GW_SHA256_HEX / 2, out);
}

void gw_segment_seal_line(struct gw_buf *out, uint64_t last_seq, uint64_t bytes, const char *sha256,
                          int checked)
{
    size_t start = out->len;
    gw_buf_field_u64(out, "{\"type\":\"seal\",\"last_seq\":", last_seq);
    gw_buf_field_u64(out, ",\"bytes\":", bytes);
    gw_buf_puts(out, ",\"sha256\":\"");
    gw_buf_puts(out, sha256);
    gw_buf_puts(out, "\"}");
    if (checked)
        gw_record_end(out, start);
    else
        gw_buf_puts(out, "\n");
}

/* Reads the decimal after `key` at *p (advancing it). Returns 0 or -EINVAL. */
static int take_u64(const char **p, const char *end, const char *key, uint64_t *v)
{
    size_t k = strlen(key);
    if ((size_t)(end - *p) < k || memcmp(*p, key, k) != 0)
        return -EINVAL;
    *p += k;
    const char *d = *p;
    while (*p < end && **p >= '0' && **p <= '9')
        (*p)++;
    char digits[24];
    if (*p == d || *p - d > 20)
        return -EINVAL;
    memcpy(digits, d, (size_t)(*p - d));
    digits[*p - d] = '\0';
    return gw_parse_u64(digits, 0, UINT64_MAX, v) == 0 && (digits[0] != '0' || !digits[1])
               ? 0
               : -EINVAL;
}

/* Reads `key` then 64 lowercase hex digits and `tail`, which must end the line. */
static int take_hex_end(const char *p, const char *end, const char *key, char *out)
{
    size_t k = strlen(key);
    if ((size_t)(end - p) != k + GW_SHA256_HEX + 2 || memcmp(p, key, k) != 0 ||
        memcmp(end - 2, "\"}", 2) != 0)
        return -EINVAL;
    p += k;
    for (int i = 0; i < GW_SHA256_HEX; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return -EINVAL;
    memcpy(out, p, GW_SHA256_HEX);
    out[GW_SHA256_HEX] = '\0';
    return 0;
}

/* A header or seal line as its record: without the crc32 member when it carries one (checked
 * first), copied to tmp. Returns 0, or -EINVAL: a checksum that does not match, or too long. */
static int as_record(const char **line, size_t *len, char tmp[SHORT_LINE_MAX])
{
    size_t body;
    int rc = gw_record_check(*line, *len, &body);
    if (rc == -ENOMSG)
        return 0; /* a line written before checksums */
    if (rc != 0 || body + 1 > SHORT_LINE_MAX)
        return -EINVAL;
    memcpy(tmp, *line, body);
    tmp[body] = '}';
    *line = tmp;
    *len = body + 1;
    return 0;
}

int gw_segment_parse_header(const char *line, size_t len, uint64_t *first_seq, char *prev)
{
    char tmp[SHORT_LINE_MAX];
    if (as_record(&line, &len, tmp) != 0)
        return -EINVAL;
    const char *p = line, *end = line + len;
    if (take_u64(&p, end, "{\"type\":\"segment\",\"first_seq\":", first_seq) != 0)
        return -EINVAL;
    return take_hex_end(p, end, ",\"prev\":\"", prev);
}

int gw_segment_parse_seal(const char *line, size_t len, uint64_t *last_seq, uint64_t *bytes,
                          char *sha256)
{
    char tmp[SHORT_LINE_MAX];
    if (as_record(&line, &len, tmp) != 0)
        return -EINVAL;
    const char *p = line, *end = line + len;
    if (take_u64(&p, end, "{\"type\":\"seal\",\"last_seq\":", last_seq) != 0 ||
        take_u64(&p, end, ",\"bytes\":", bytes) != 0)
        return -EINVAL;
    return take_hex_end(p, end, ",\"sha256\":\"", sha256);
}

int gw_segment_seal_at(const struct gw_segment *s, uint64_t offset)
{
    if (s->bytes) /* a sealed segment in the state dir: its seal says where it starts */
        return offset == s->bytes;
    /* an archived one (archive.jsonl gives its size only): a seal line for the bytes before
     * `offset`, with or without its checksum (its sha256 is of a fixed length), ends the file
     * exactly */
    char sha[GW_SHA256_HEX + 1];
    memset(sha, '0', GW_SHA256_HEX);
    sha[GW_SHA256_HEX] = '\0';
    int hit = 0;
    for (int checked = 0; checked < 2 && !hit; checked++) {
        struct gw_buf seal;
        gw_buf_init(&seal);
        gw_segment_seal_line(&seal, s->last_seq, offset, sha, checked);
        hit = !seal.failed && offset + seal.len == s->size;
        gw_buf_free(&seal);
    }
    return hit;
}
