/* A batch whose body is already its canonical form (docs/journal.md §3.1): read by one scan of
 * the exact grammar, its fingerprint the SHA-256 of the body itself. Anything else, including
 * every invalid batch, is left to the strict reader, which names the fault. */
#include "batch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "shard.h"

struct scan {
    const char *p, *end;
};

/* Takes the literal `text` at the scan position. */
static int take(struct scan *s, const char *text, size_t len)
{
    if ((size_t)(s->end - s->p) < len || memcmp(s->p, text, len) != 0)
        return 0;
    s->p += len;
    return 1;
}

#define TAKE(s, literal) take((s), (literal), sizeof(literal) - 1)

#define BYTES(b) (UINT64_C(0x0101010101010101) * (b))

/* The bytes of w that end a plain string, each as its high bit: below 0x20, from 0x80, '"' or
 * '\\'. Each byte is tested in its own 7 bits (no carry crosses into the next), so the mask is
 * exact and its lowest bit names the first such byte (memory order, little-endian). */
static uint64_t ends_mask(uint64_t w)
{
    const uint64_t low7 = BYTES(0x7f);
    uint64_t quote = w ^ BYTES('"'), slash = w ^ BYTES('\\');
    uint64_t is_quote = ~(((quote & low7) + low7) | quote);
    uint64_t is_slash = ~(((slash & low7) + low7) | slash);
    uint64_t is_control = ~((w & low7) + BYTES(0x60));
    return (is_quote | is_slash | is_control | w) & BYTES(0x80);
}

/* A string of 1..max bytes that a receipt writes as they are: ASCII from 0x20 but for '"' and
 * '\\' (docs/decisions.md "Receipt bytes"), up to its closing quote, which is taken too. Eight
 * bytes are tested at a time; the last few, one at a time. */
static int take_plain(struct scan *s, size_t max, const char **str, size_t *len)
{
    const unsigned char *p = (const unsigned char *)s->p, *end = (const unsigned char *)s->end;
    const unsigned char *from = p;
    uint64_t w, m = 0;
    while (end - p >= 8 && (memcpy(&w, p, 8), (m = ends_mask(w)) == 0))
        p += 8;
    if (m)
        p += (unsigned)__builtin_ctzll(m) >> 3;
    else
        while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
            p++;
    size_t n = (size_t)(p - from);
    if (p == end || *p != '"' || n < 1 || n > max)
        return 0;
    *str = s->p;
    *len = n;
    s->p = (const char *)p + 1;
    return 1;
}

/* A size as the receipt writes it: no sign, no leading zero, at most 2^53 - 1. */
static int take_size(struct scan *s, uint64_t *out)
{
    const char *from = s->p;
    uint64_t v = 0;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9' && s->p - from < 17)
        v = v * 10 + (uint64_t)(*s->p++ - '0');
    size_t n = (size_t)(s->p - from);
    if (n == 0 || (n > 1 && *from == '0') || v > GW_SAFE_INT_MAX)
        return 0;
    *out = v;
    return 1;
}

/* One change `{"id":"..","key":"..","size":N}` into c. */
static int take_change(struct scan *s, struct gw_change *c)
{
    return TAKE(s, "{\"id\":\"") && take_plain(s, GW_CHANGE_ID_MAX, &c->id, &c->id_len) &&
           TAKE(s, ",\"key\":\"") && take_plain(s, GW_KEY_MAX, &c->key, &c->key_len) &&
           TAKE(s, ",\"size\":") && take_size(s, &c->size) && TAKE(s, "}");
}

/* Room for one more change, growing by doubling, never past max_changes. Returns 1, or 0: more
 * changes than allowed (the strict reader says so), or out of memory with *no_mem set. */
static int room_for_one(struct gw_batch *out, size_t *cap, size_t max_changes, int *no_mem)
{
    if (out->count < *cap)
        return 1;
    size_t want = *cap ? 2 * *cap : 64;
    if (want > max_changes)
        want = max_changes;
    if (want <= out->count)
        return 0;
    struct gw_change *grown = realloc(out->changes, want * sizeof(*grown));
    if (!grown) {
        *no_mem = 1;
        return 0;
    }
    out->changes = grown;
    *cap = want;
    return 1;
}

static int take_changes(struct scan *s, size_t max_changes, struct gw_batch *out, int *no_mem)
{
    size_t cap = 0;
    do {
        if (!room_for_one(out, &cap, max_changes, no_mem) ||
            !take_change(s, &out->changes[out->count]))
            return 0;
        out->count++;
    } while (TAKE(s, ","));
    return TAKE(s, "]}") && s->p == s->end;
}

/* The batch's strings, read in the request's body, moved into a copy the batch owns. */
static int own_strings(const char *data, size_t len, struct gw_batch *out)
{
    char *copy = malloc(len);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, data, len);
    out->batch_id = copy + (out->batch_id - data);
    for (size_t i = 0; i < out->count; i++) {
        out->changes[i].id = copy + (out->changes[i].id - data);
        out->changes[i].key = copy + (out->changes[i].key - data);
    }
    out->doc = copy;
    return 0;
}

int gw_batch_read_canonical(const char *data, size_t len, size_t max_changes, struct gw_batch *out)
{
    struct scan s = {data, data + len};
    int no_mem = 0;
    int canonical = TAKE(&s, "{\"batch_id\":\"") &&
                    take_plain(&s, GW_BATCH_ID_MAX, &out->batch_id, &out->batch_id_len) &&
                    gw_name_valid(out->batch_id, out->batch_id_len, GW_BATCH_ID_MAX) &&
                    TAKE(&s, ",\"changes\":[") && take_changes(&s, max_changes, out, &no_mem);
    if (canonical && (!EVP_Digest(data, len, out->fingerprint, NULL, EVP_sha256(), NULL) ||
                      own_strings(data, len, out) != 0))
        no_mem = 1;
    if (!canonical || no_mem) {
        free(out->changes);
        memset(out, 0, sizeof(*out));
        return no_mem ? -ENOMEM : 0;
    }
    return 1;
}
