/* The growable buffer and its JSON string/number writers. */
#include "buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gw_buf_init(struct gw_buf *b)
{
    memset(b, 0, sizeof(*b));
}

void gw_buf_free(struct gw_buf *b)
{
    free(b->data);
    gw_buf_init(b);
}

void gw_buf_reset(struct gw_buf *b)
{
    b->len = 0;
    b->failed = 0;
}

int gw_buf_grow(struct gw_buf *b, size_t more)
{
    if (b->failed)
        return -ENOMEM;
    if (b->cap - b->len >= more)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < more)
        cap *= 2;
    char *data = realloc(b->data, cap);
    if (!data) {
        b->failed = 1;
        return -ENOMEM;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

/* The number of decimal digits of v, 1 to 20. */
static unsigned decimal_digits(uint64_t v)
{
    unsigned n = 1;
    for (;;) {
        if (v < 10)
            return n;
        if (v < 100)
            return n + 1;
        if (v < 1000)
            return n + 2;
        if (v < 10000)
            return n + 3;
        v /= 10000;
        n += 4;
    }
}

/* "00" to "99": two digits per division, written in place from the last (docs/performance.md
 * §19: every placement writes its hash and point, ten digits each). */
static const char digit_pairs[] = "00010203040506070809101112131415161718192021222324252627282930"
                                  "31323334353637383940414243444546474849505152535455565758596061"
                                  "6263646566676869707172737475767778798081828384858687888990919293"
                                  "949596979899";

/* The number of decimal digits of a 32-bit v, 1 to 10, by comparisons (no loop). */
static unsigned decimal_digits_u32(uint32_t v)
{
    if (v < 100000)
        return v < 100 ? 1 + (v >= 10) : v < 1000 ? 3 : v < 10000 ? 4 : 5;
    return v < 10000000 ? 6 + (v >= 1000000) : v < 100000000 ? 8 : v < 1000000000 ? 9 : 10;
}

/* Writes v's n digits ending at p, two per division. */
static void put_digits_u32(char *p, uint32_t v)
{
    while (v >= 100) {
        uint32_t q = v / 100;
        p -= 2;
        memcpy(p, digit_pairs + 2 * (v - 100 * q), 2);
        v = q;
    }
    if (v >= 10)
        memcpy(p - 2, digit_pairs + 2 * v, 2);
    else
        p[-1] = (char)('0' + v);
}

void gw_buf_u64(struct gw_buf *b, uint64_t v)
{
    unsigned n = v <= UINT32_MAX ? decimal_digits_u32((uint32_t)v) : decimal_digits(v);
    if (gw_buf_reserve(b, n) != 0)
        return;
    char *p = b->data + b->len + n;
    b->len += n;
    /* a receipt's numbers (hash, point, vnode, size) fit in 32 bits: 32-bit divisions */
    while (v > UINT32_MAX) {
        p -= 2;
        memcpy(p, digit_pairs + 2 * (v % 100), 2);
        v /= 100;
    }
    put_digits_u32(p, (uint32_t)v);
}

void gw_buf_printf(struct gw_buf *b, const char *fmt, ...)
{
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n >= 0 && gw_buf_reserve(b, (size_t)n + 1) == 0) {
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
        b->len += (size_t)n;
    } else if (n < 0) {
        b->failed = 1;
    }
    va_end(again);
}

void gw_buf_u128(struct gw_buf *b, gw_u128 v)
{
    char tmp[39]; /* 2^128 - 1 has 39 digits */
    size_t n = 0;
    do {
        tmp[sizeof(tmp) - 1 - n++] = (char)('0' + (unsigned)(v % 10));
        v /= 10;
    } while (v);
    gw_buf_append(b, tmp + sizeof(tmp) - n, n);
}

void gw_buf_field_u128(struct gw_buf *b, const char *text, gw_u128 v)
{
    gw_buf_puts(b, text);
    gw_buf_u128(b, v);
}

static const char hexdigits[] = "0123456789abcdef";

static int needs_escape(unsigned char c)
{
    return c < 0x20 || c == '"' || c == '\\';
}

static void append_escape(struct gw_buf *b, unsigned char c)
{
    static const char short_form[] = {['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r',
                                      ['\t'] = 't', ['"'] = '"',  ['\\'] = '\\'};
    char esc[6] = {'\\', 'u', '0', '0', hexdigits[c >> 4], hexdigits[c & 15]};
    if (c < sizeof(short_form) && short_form[c]) {
        esc[1] = short_form[c];
        gw_buf_append(b, esc, 2);
    } else {
        gw_buf_append(b, esc, 6);
    }
}

/* The length of the well-formed UTF-8 sequence (RFC 3629: no overlong form, no surrogate,
 * nothing past U+10FFFF) that starts at p[0] >= 0x80 within n bytes, or 0. */
static size_t utf8_sequence(const unsigned char *p, size_t n)
{
    size_t len = p[0] >= 0xF0 ? 4 : p[0] >= 0xE0 ? 3 : 2;
    unsigned char lo = p[0] == 0xE0 ? 0xA0 : p[0] == 0xF0 ? 0x90 : 0x80;
    unsigned char hi = p[0] == 0xED ? 0x9F : p[0] == 0xF4 ? 0x8F : 0xBF;
    if (p[0] < 0xC2 || p[0] > 0xF4 || n < len || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t k = 2; k < len; k++)
        if (p[k] < 0x80 || p[k] > 0xBF)
            return 0;
    return len;
}

/* How many of the first bytes of p are written as they are without a look at their neighbours:
 * ASCII that needs no escape. */
static size_t plain_ascii(const unsigned char *p, size_t len)
{
    size_t n = 0;
    while (n < len && p[n] < 0x80 && !needs_escape(p[n]))
        n++;
    return n;
}

void gw_buf_json_string(struct gw_buf *b, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t run = 0, plain = plain_ascii(p, len);
    if (plain == len) { /* the common case: one copy between the quotes */
        if (gw_buf_reserve(b, len + 2) != 0)
            return;
        char *o = b->data + b->len;
        o[0] = '"';
        memcpy(o + 1, s, len);
        o[len + 1] = '"';
        b->len += len + 2;
        return;
    }
    gw_buf_append(b, "\"", 1);
    for (size_t i = plain; i < len; i++) {
        if (p[i] < 0x80 && !needs_escape(p[i]))
            continue;
        size_t seq = p[i] >= 0x80 ? utf8_sequence(p + i, len - i) : 0;
        if (seq > 0) {
            i += seq - 1;
            continue;
        }
        gw_buf_append(b, s + run, i - run);
        if (p[i] >= 0x80) /* not UTF-8: each such byte is written as U+FFFD (docs/api.md §1) */
            gw_buf_puts(b, "\\ufffd");
        else
            append_escape(b, p[i]);
        run = i + 1;
    }
    gw_buf_append(b, s + run, len - run);
    gw_buf_append(b, "\"", 1);
}

void gw_buf_hex(struct gw_buf *b, const unsigned char *bytes, size_t len)
{
    if (gw_buf_reserve(b, 2 * len) != 0)
        return;
    for (size_t i = 0; i < len; i++) {
        b->data[b->len++] = hexdigits[bytes[i] >> 4];
        b->data[b->len++] = hexdigits[bytes[i] & 15];
    }
}

void gw_hex_encode(const unsigned char *bytes, size_t len, char *out)
{
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = hexdigits[bytes[i] >> 4];
        out[2 * i + 1] = hexdigits[bytes[i] & 15];
    }
    out[2 * len] = '\0';
}

static int hex_value(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int gw_hex_decode(const char *s, unsigned char *out, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        int hi = hex_value(s[2 * i]), lo = hex_value(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -EINVAL;
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}
