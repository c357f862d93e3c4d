/* A growable byte buffer, and the JSON pieces written into it without building a tree. */
#ifndef SHARDGATE_GW_BUF_H
#define SHARDGATE_GW_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Cumulative totals (docs/api.md, GET /v1/shards): exact past 2^64, never wrapped. */
__extension__ typedef unsigned __int128 gw_u128;

struct gw_buf {
    char *data;
    size_t len;
    size_t cap;
    int failed; /* set once an allocation failed; later appends do nothing */
};

void gw_buf_init(struct gw_buf *b);
void gw_buf_free(struct gw_buf *b);
void gw_buf_reset(struct gw_buf *b);

/* gw_buf_reserve when the room is not there: grows the storage, or fails the buffer. */
int gw_buf_grow(struct gw_buf *b, size_t more);

/* The appends every receipt makes per field are inline, so that the room check is a compare and
 * the length of a literal is known when compiling (docs/performance.md §19). */

/* Makes room for `more` bytes. Returns 0, or -ENOMEM (and marks the buffer failed). */
static inline int gw_buf_reserve(struct gw_buf *b, size_t more)
{
    return !b->failed && b->cap - b->len >= more ? 0 : gw_buf_grow(b, more);
}

static inline void gw_buf_append(struct gw_buf *b, const void *data, size_t len)
{
    if (len == 0 || gw_buf_reserve(b, len) != 0)
        return; /* nothing to copy: an empty buffer may have no storage yet */
    memcpy(b->data + b->len, data, len);
    b->len += len;
}

static inline void gw_buf_puts(struct gw_buf *b, const char *s)
{
    gw_buf_append(b, s, strlen(s));
}

void gw_buf_u64(struct gw_buf *b, uint64_t v);

/* printf into the buffer. */
void gw_buf_printf(struct gw_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends `text` (JSON punctuation and a key, such as ",\"load\":") and then `v`. */
static inline void gw_buf_field_u64(struct gw_buf *b, const char *text, uint64_t v)
{
    gw_buf_puts(b, text);
    gw_buf_u64(b, v);
}

/* The exact decimal digits of a 128-bit total (up to 39), and the same after `text`. */
void gw_buf_u128(struct gw_buf *b, gw_u128 v);
void gw_buf_field_u128(struct gw_buf *b, const char *text, gw_u128 v);

/* A JSON string literal of `len` raw bytes: `"` and `\` escaped, control characters as \b \f
 * \n \r \t or \u00xx, every other byte (UTF-8 included) as it is. */
void gw_buf_json_string(struct gw_buf *b, const char *s, size_t len);

/* Lowercase hex of `len` bytes. */
void gw_buf_hex(struct gw_buf *b, const unsigned char *bytes, size_t len);

/* The same into `out`: 2 * len digits and a NUL. */
void gw_hex_encode(const unsigned char *bytes, size_t len, char *out);

/* Decodes 2 * len lowercase hex digits of `s` into `out`. Returns 0, or -EINVAL when one is not
 * a lowercase hex digit. */
int gw_hex_decode(const char *s, unsigned char *out, size_t len);

#endif
