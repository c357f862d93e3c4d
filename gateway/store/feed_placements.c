/* Walks the placements of a stored receipt by its fixed key order (docs/contract.md §5). */
#include "feed_placements.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

/* `lit` at p, else NULL; the position after it. */
static const char *expect(const char *p, const char *end, const char *lit)
{
    size_t n = strlen(lit);
    if (!p || (size_t)(end - p) < n || memcmp(p, lit, n) != 0)
        return NULL;
    return p + n;
}

/* The JSON string at p (its opening quote) as a span; the position after its closing quote. */
static const char *string_at(const char *p, const char *end, struct gw_feed_span *out)
{
    if (!p || p >= end || *p != '"')
        return NULL;
    for (const char *q = p + 1; q < end;) {
        const char *quote = memchr(q, '"', (size_t)(end - q));
        if (!quote)
            return NULL;
        size_t slashes = 0;
        while (quote - slashes > p + 1 && quote[-1 - (ptrdiff_t)slashes] == '\\')
            slashes++;
        if (slashes % 2 == 0) {
            out->p = p;
            out->n = (size_t)(quote + 1 - p);
            return quote + 1;
        }
        q = quote + 1;
    }
    return NULL;
}

static const char *number_at(const char *p, const char *end, uint64_t *out)
{
    if (!p || p >= end || *p < '0' || *p > '9')
        return NULL;
    uint64_t v = 0;
    while (p < end && *p >= '0' && *p <= '9')
        v = v * 10 + (uint64_t)(*p++ - '0');
    *out = v;
    return p;
}

/* The first occurrence of `lit` in [p, end), or NULL. */
static const char *find(const char *p, const char *end, const char *lit)
{
    size_t n = strlen(lit);
    while (p && (size_t)(end - p) >= n) {
        const char *c = memchr(p, lit[0], (size_t)(end - p) - n + 1);
        if (!c)
            return NULL;
        if (memcmp(c, lit, n) == 0)
            return c;
        p = c + 1;
    }
    return NULL;
}

int gw_feed_receipt_open(const char *line, size_t len, struct gw_feed_receipt *out)
{
    const char *end = line + len;
    memset(out, 0, sizeof(*out));
    out->end = end;
    const char *p = find(line, end, ",\"receipt\":{\"receipt_version\":");
    p = p ? find(p, end, ",\"batch_id\":") : NULL;
    p = string_at(expect(p, end, ",\"batch_id\":"), end, &out->batch_id);
    if (!p)
        return -EINVAL;
    const char *e = expect(p, end, ",\"epoch\":");
    if (e && !string_at(e, end, &out->epoch))
        return -EINVAL;
    /* Between here and the placements only the ring: shard ids and numbers, no quotes. */
    p = expect(find(p, end, ",\"placements\":["), end, ",\"placements\":[");
    if (!p)
        return -EINVAL;
    out->at = p;
    return 0;
}

int gw_feed_receipt_next(struct gw_feed_receipt *r, struct gw_feed_placement *out)
{
    const char *p = r->at, *end = r->end;
    if (p < end && *p == ']')
        return 0;
    p = string_at(expect(p, end, "{\"id\":"), end, &out->id);
    p = string_at(expect(p, end, ",\"key\":"), end, &out->key);
    p = number_at(expect(p, end, ",\"size\":"), end, &out->size);
    p = p ? find(p, end, ",\"shard\":") : NULL; /* past hash, point and vnode: digits only */
    p = string_at(expect(p, end, ",\"shard\":"), end, &out->shard);
    p = p ? memchr(p, '}', (size_t)(end - p)) : NULL; /* reason and home hold no brace */
    if (!p || p + 1 >= end || (p[1] != ',' && p[1] != ']'))
        return -EINVAL;
    r->at = p[1] == ',' ? p + 2 : p + 1;
    return 1;
}
