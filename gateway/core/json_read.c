/* The strict JSON reader: one pass, no per-value allocation (nodes in one growing array,
 * strings unescaped into one arena no larger than the input). It replaced jansson for
 * batches because building jansson's tree (a hash table and a malloc per value) was 85% of
 * the gateway's cost per change; see docs/decisions.md. */
#include "json_read.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 512
#define LINEAR_DUP_CHECK 64 /* objects with more members are checked by sorting at the end */

/* Where the reader is: the member name or array index at each depth, for a budget's path. */
struct path_step {
    const char *key;
    uint32_t key_len;
    uint32_t index;
    int member;
};

struct reader {
    const unsigned char *start, *p, *end;
    struct jdoc *d;
    size_t cap; /* nodes allocated */
    char *out;  /* next free byte of the arena */
    int depth;
    int no_mem;
    int over_budget;
    int nul_read; /* a \u0000 was unescaped since read_member last cleared it */
    struct json_limits limits;
    size_t elements; /* array elements read so far, over every array */
    struct path_step steps[MAX_DEPTH + 1];
};

static int fail_at(struct reader *r, const unsigned char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail_at(struct reader *r, const unsigned char *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->d->what, sizeof(r->d->what), fmt, ap);
    va_end(ap);
    r->d->error_at = (size_t)(at - r->start);
    return -1;
}

/* How the byte at `at` reads in a message: 'x', byte 0xff, or end of input. */
static const char *describe(const struct reader *r, const unsigned char *at, char *buf, size_t n)
{
    if (at >= r->end)
        snprintf(buf, n, "end of input");
    else if (*at >= 0x20 && *at < 0x7f)
        snprintf(buf, n, "'%c'", *at);
    else
        snprintf(buf, n, "byte 0x%02x", *at);
    return buf;
}

/* The JSON path of the value being read, in the notation of batch errors: "$" for the root,
 * "changes[3].id", "$[7]" for an element of a top-level array, [""] for an empty name. */
static void format_path(const struct reader *r, int depth, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, depth == 0 ? "$" : "");
    for (int i = 1; i <= depth && n < cap; i++) {
        const struct path_step *s = &r->steps[i];
        const char *root = i == 1 ? "$" : "";
        int k = s->key_len < 64 ? (int)s->key_len : 64;
        if (!s->member)
            n += (size_t)snprintf(out + n, cap - n, "%s[%u]", root, s->index);
        else if (s->key_len == 0)
            n += (size_t)snprintf(out + n, cap - n, "%s[\"\"]", root);
        else
            n += (size_t)snprintf(out + n, cap - n, "%s%.*s", i == 1 ? "" : ".", k, s->key);
    }
}

/* Stops the read where the document goes past a budget; the path names the value about to be
 * read (`depth` = r->depth) or the array it would be added to (r->depth - 1). */
static int past_budget(struct reader *r, int depth, const char *what, size_t limit)
{
    r->over_budget = 1;
    format_path(r, depth, r->d->path, sizeof(r->d->path));
    return fail_at(r, r->p, "more than %zu %s in the document", limit, what);
}

static int unexpected(struct reader *r, const char *expected)
{
    char buf[32];
    return fail_at(r, r->p, "expected %s, found %s", expected, describe(r, r->p, buf, sizeof(buf)));
}

static void skip_ws(struct reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
        r->p++;
}

/* Room for every node a budget allows at once (a value takes two bytes at least): growing by
 * doubling would copy, and hold old and new arrays together, at the worst moment. Pages not
 * used are never touched. */
static size_t first_capacity(const struct reader *r)
{
    size_t most = (size_t)(r->end - r->start) / 2 + 2;
    if (r->limits.max_values && r->limits.max_values < most)
        most = r->limits.max_values;
    return r->limits.max_values ? most : 1024;
}

/* A new node of `type`; returns its index, or 0 (never a new node's index) when out of memory. */
static uint32_t new_node(struct reader *r, uint32_t type)
{
    struct jdoc *d = r->d;
    if (d->count == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : first_capacity(r);
        struct jnode *nodes = cap <= UINT32_MAX ? realloc(d->nodes, cap * sizeof(*nodes)) : NULL;
        if (!nodes) {
            r->no_mem = 1;
            return 0;
        }
        d->nodes = nodes;
        r->cap = cap;
    }
    d->nodes[d->count] = (struct jnode){.type = type};
    return (uint32_t)d->count++;
}

/* The length of the valid UTF-8 sequence at p (2..4 bytes), or 0: no overlong forms, no
 * surrogates, nothing above U+10FFFF. */
static size_t utf8_sequence(const unsigned char *p, const unsigned char *end)
{
    size_t n = p[0] < 0xc2 ? 0 : p[0] < 0xe0 ? 2 : p[0] < 0xf0 ? 3 : p[0] < 0xf5 ? 4 : 0;
    if (n == 0 || (size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f) ||
        (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] > 0x8f))
        return 0;
    return n;
}

static int hex4(const unsigned char *p, const unsigned char *end, uint32_t *out)
{
    if (end - p < 4)
        return -1;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        int x = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (x < 0)
            return -1;
        v = v << 4 | (uint32_t)x;
    }
    *out = v;
    return 0;
}

static void put_utf8(struct reader *r, uint32_t cp)
{
    unsigned char *o = (unsigned char *)r->out;
    if (cp < 0x80) {
        *o++ = (unsigned char)cp;
    } else if (cp < 0x800) {
        *o++ = (unsigned char)(0xc0 | cp >> 6);
        *o++ = (unsigned char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        *o++ = (unsigned char)(0xe0 | cp >> 12);
        *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (unsigned char)(0x80 | (cp & 0x3f));
    } else {
        *o++ = (unsigned char)(0xf0 | cp >> 18);
        *o++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
        *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        *o++ = (unsigned char)(0x80 | (cp & 0x3f));
    }
    r->out = (char *)o;
}

/* \uXXXX at r->p (after the backslash and 'u'), with a surrogate pair as one code point. */
static int unicode_escape(struct reader *r, const unsigned char *esc)
{
    uint32_t cp, lo;
    if (hex4(r->p, r->end, &cp) != 0)
        return fail_at(r, esc, "invalid \\u escape: four hex digits expected");
    r->p += 4;
    if (cp >= 0xdc00 && cp <= 0xdfff)
        return fail_at(r, esc, "invalid \\u%04X: a low surrogate without a high one", cp);
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u' ||
            hex4(r->p + 2, r->end, &lo) != 0 || lo < 0xdc00 || lo > 0xdfff)
            return fail_at(r, esc, "invalid \\u%04X: a high surrogate without a low one", cp);
        r->p += 6;
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    }
    r->nul_read |= cp == 0;
    put_utf8(r, cp);
    return 0;
}

static int escape(struct reader *r)
{
    static const char simple[] = "\"\\/bfnrt", meaning[] = "\"\\/\b\f\n\r\t";
    const unsigned char *esc = r->p++;
    if (r->p >= r->end)
        return fail_at(r, r->p, "unterminated string");
    unsigned char c = *r->p++;
    if (c == 'u')
        return unicode_escape(r, esc);
    const char *hit = c ? strchr(simple, c) : NULL;
    if (!hit) {
        char buf[32];
        return fail_at(r, esc, "invalid escape '\\' followed by %s",
                       describe(r, esc + 1, buf, sizeof(buf)));
    }
    *r->out++ = meaning[hit - simple];
    return 0;
}

/* A string at r->p (the opening quote), unescaped into the arena. */
static int read_string(struct reader *r, const char **s, uint32_t *len)
{
    const unsigned char *open = r->p++;
    char *begin = r->out;
    for (;;) {
        const unsigned char *run = r->p;
        while (r->p < r->end && *r->p >= 0x20 && *r->p < 0x80 && *r->p != '"' && *r->p != '\\')
            r->p++;
        memcpy(r->out, run, (size_t)(r->p - run));
        r->out += r->p - run;
        if (r->p >= r->end)
            return fail_at(r, open, "unterminated string");
        unsigned char c = *r->p;
        if (c == '"')
            break;
        if (c == '\\') {
            if (escape(r) != 0)
                return -1;
            continue;
        }
        if (c < 0x20)
            return fail_at(r, r->p, "control character 0x%02x in a string: escape it", c);
        size_t n = utf8_sequence(r->p, r->end);
        if (n == 0)
            return fail_at(r, r->p, "invalid UTF-8: byte 0x%02x in a string", c);
        memcpy(r->out, r->p, n);
        r->out += n;
        r->p += n;
    }
    r->p++;
    *s = begin;
    *len = (uint32_t)(r->out - begin);
    return 0;
}

static int digits(struct reader *r)
{
    const unsigned char *from = r->p;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
        r->p++;
    return r->p > from ? 0 : unexpected(r, "a digit");
}

/* The integer text [s, e) (an optional '-' and digits) as int64; -1 when out of range. */
static int to_int64(const unsigned char *s, const unsigned char *e, int64_t *out)
{
    int neg = *s == '-';
    uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (const unsigned char *p = s + neg; p < e; p++) {
        if (v > (limit - (uint64_t)(*p - '0')) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

static int read_number(struct reader *r, uint32_t node)
{
    const unsigned char *s = r->p;
    if (*r->p == '-')
        r->p++;
    if (r->p < r->end && *r->p == '0')
        r->p++;
    else if (digits(r) != 0)
        return -1;
    int real = 0;
    if (r->p < r->end && *r->p == '.') {
        r->p++;
        real = 1;
        if (digits(r) != 0)
            return -1;
    }
    if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
        r->p++;
        real = 1;
        if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
            r->p++;
        if (digits(r) != 0)
            return -1;
    }
    r->d->nodes[node].type = real ? J_REAL : J_INT;
    if (!real && to_int64(s, r->p, &r->d->nodes[node].num) != 0)
        return fail_at(r, s, "integer %.*s%s does not fit in 64 bits",
                       r->p - s > 40 ? 40 : (int)(r->p - s), (const char *)s,
                       r->p - s > 40 ? "..." : "");
    return 0;
}

static int read_literal(struct reader *r, uint32_t node)
{
    static const char *const words[] = {"null", "false", "true"};
    static const uint32_t types[] = {J_NULL, J_FALSE, J_TRUE};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(words[i]);
        if ((size_t)(r->end - r->p) >= n && memcmp(r->p, words[i], n) == 0) {
            r->p += n;
            r->d->nodes[node].type = types[i];
            return 0;
        }
    }
    return unexpected(r, "a JSON value");
}

static int read_value(struct reader *r, uint32_t *out);

/* Appends child `c` after `last` (0: it is the first) of container `parent`. */
static void link_child(struct reader *r, uint32_t parent, uint32_t *last, uint32_t c)
{
    struct jnode *n = r->d->nodes;
    if (*last)
        n[*last].next = c;
    else
        n[parent].first = c;
    n[parent].count++;
    *last = c;
}

static int read_array(struct reader *r, uint32_t node)
{
    uint32_t last = 0, child;
    r->p++;
    skip_ws(r);
    if (r->p < r->end && *r->p == ']') {
        r->p++;
        return 0;
    }
    for (;;) {
        if (r->limits.max_elements && ++r->elements > r->limits.max_elements)
            return past_budget(r, r->depth - 1, "array elements", r->limits.max_elements);
        r->steps[r->depth] = (struct path_step){.index = r->d->nodes[node].count};
        if (read_value(r, &child) != 0)
            return -1;
        link_child(r, node, &last, child);
        skip_ws(r);
        if (r->p < r->end && *r->p == ',') {
            r->p++;
            skip_ws(r);
        } else if (r->p < r->end && *r->p == ']') {
            r->p++;
            return 0;
        } else {
            return unexpected(r, "',' or ']' in an array");
        }
    }
}

static int same_key(const struct jnode *a, const struct jnode *b)
{
    return a->key_len == b->key_len && memcmp(a->key, b->key, a->key_len) == 0;
}

static int key_order(const void *pa, const void *pb)
{
    const struct jnode *a = *(const struct jnode *const *)pa, *b = *(const struct jnode *const *)pb;
    size_t n = a->key_len < b->key_len ? a->key_len : b->key_len;
    int c = memcmp(a->key, b->key, n);
    if (c == 0)
        c = (a->key_len > b->key_len) - (a->key_len < b->key_len);
    return c ? c : (a > b) - (a < b); /* nodes are in document order */
}

/* Large objects: sort the member names and name a duplicate (the first in the document of
 * the members that repeat an earlier one). */
static int check_big_object(struct reader *r, uint32_t node, const unsigned char *open)
{
    const struct jnode *o = &r->d->nodes[node];
    const struct jnode **m = malloc(o->count * sizeof(*m)), *dup = NULL;
    if (!m) {
        r->no_mem = 1;
        return -1;
    }
    size_t k = 0;
    for (uint32_t c = o->first; c; c = r->d->nodes[c].next)
        m[k++] = &r->d->nodes[c];
    qsort(m, k, sizeof(*m), key_order);
    for (size_t i = 1; i < k; i++)
        if (same_key(m[i - 1], m[i]) && (!dup || m[i] < dup))
            dup = m[i];
    free(m);
    if (dup)
        return fail_at(r, open, "duplicate member \"%.*s\" in the object starting here",
                       dup->key_len < 64 ? (int)dup->key_len : 64, dup->key);
    return 0;
}

/* Reads `"name": value` into a new node linked under `node`; checks small objects for a
 * duplicate name at once. */
static int read_member(struct reader *r, uint32_t node, uint32_t *last)
{
    const char *key;
    uint32_t key_len, child;
    const unsigned char *at = r->p;
    if (r->p >= r->end || *r->p != '"')
        return unexpected(r, "a member name (a string)");
    r->nul_read = 0;
    if (read_string(r, &key, &key_len) != 0)
        return -1;
    if (r->nul_read) /* only an escape puts a NUL in a string: no search of the name */
        return fail_at(r, at, "\\u0000 in a member name is not supported");
    if (r->d->nodes[node].count < LINEAR_DUP_CHECK)
        for (uint32_t c = r->d->nodes[node].first; c; c = r->d->nodes[c].next)
            if (r->d->nodes[c].key_len == key_len && memcmp(r->d->nodes[c].key, key, key_len) == 0)
                return fail_at(r, at, "duplicate member \"%.*s\"", key_len < 64 ? (int)key_len : 64,
                               key);
    skip_ws(r);
    if (r->p >= r->end || *r->p != ':')
        return unexpected(r, "':' after a member name");
    r->p++;
    skip_ws(r);
    r->steps[r->depth] = (struct path_step){.key = key, .key_len = key_len, .member = 1};
    if (read_value(r, &child) != 0)
        return -1;
    r->d->nodes[child].key = key;
    r->d->nodes[child].key_len = key_len;
    link_child(r, node, last, child);
    return 0;
}

static int read_object(struct reader *r, uint32_t node)
{
    const unsigned char *open = r->p++;
    uint32_t last = 0;
    skip_ws(r);
    if (r->p < r->end && *r->p == '}') {
        r->p++;
        return 0;
    }
    for (;;) {
        if (read_member(r, node, &last) != 0)
            return -1;
        skip_ws(r);
        if (r->p < r->end && *r->p == ',') {
            r->p++;
            skip_ws(r);
        } else if (r->p < r->end && *r->p == '}') {
            r->p++;
            break;
        } else {
            return unexpected(r, "',' or '}' in an object");
        }
    }
    return r->d->nodes[node].count > LINEAR_DUP_CHECK ? check_big_object(r, node, open) : 0;
}

static int read_container(struct reader *r, uint32_t node, int object)
{
    if (++r->depth > MAX_DEPTH)
        return fail_at(r, r->p, "nesting deeper than %d", MAX_DEPTH);
    int rc = object ? read_object(r, node) : read_array(r, node);
    r->depth--;
    return rc;
}

/* One value at r->p (whitespace already skipped); its node index in *out. */
static int read_value(struct reader *r, uint32_t *out)
{
    if (r->p >= r->end)
        return unexpected(r, "a JSON value");
    unsigned char c = *r->p;
    if (r->limits.max_values && r->d->count >= r->limits.max_values)
        return past_budget(r, r->depth, "values", r->limits.max_values);
    uint32_t node = new_node(r, J_NULL);
    if (r->no_mem)
        return -1;
    *out = node;
    if (c == '"') {
        if (read_string(r, &r->d->nodes[node].str, &r->d->nodes[node].len) != 0)
            return -1;
        r->d->nodes[node].type = J_STRING;
        return 0;
    }
    if (c == '{' || c == '[') {
        r->d->nodes[node].type = c == '{' ? J_OBJECT : J_ARRAY;
        return read_container(r, node, c == '{');
    }
    if (c == '-' || (c >= '0' && c <= '9'))
        return read_number(r, node);
    return read_literal(r, node);
}

/* The document at r->start..r->end, into r->d; r->d->arena already allocated. */
static int read_document(struct reader *r)
{
    uint32_t root;
    r->out = r->d->arena;
    skip_ws(r);
    int rc = read_value(r, &root);
    if (rc == 0) {
        skip_ws(r);
        if (r->p < r->end)
            rc = unexpected(r, "the end of the document");
    }
    if (r->no_mem)
        return -ENOMEM;
    return rc == 0 ? 0 : r->over_budget ? -E2BIG : -EINVAL;
}

int json_read(const char *data, size_t len, const struct json_limits *limits, struct jdoc *d)
{
    memset(d, 0, sizeof(*d));
    if (len >= UINT32_MAX) {
        snprintf(d->what, sizeof(d->what), "a document of 4 GiB or more");
        return -EINVAL;
    }
    struct reader *r = calloc(1, sizeof(*r)); /* ~12 KiB of path steps: not on the stack */
    d->arena = malloc(len + 1);
    if (!r || !d->arena) {
        free(r);
        return -ENOMEM;
    }
    r->start = r->p = (const unsigned char *)data;
    r->end = r->start + len;
    r->d = d;
    if (limits)
        r->limits = *limits;
    int rc = read_document(r);
    free(r);
    return rc;
}

void json_doc_free(struct jdoc *d)
{
    free(d->nodes);
    free(d->arena);
    d->nodes = NULL;
    d->arena = NULL;
    d->count = 0;
}

void json_position(const char *data, size_t at, size_t *line, size_t *column)
{
    size_t line_start = 0;
    *line = 1;
    for (size_t i = 0; i < at; i++)
        if (data[i] == '\n') {
            (*line)++;
            line_start = i + 1;
        }
    *column = at - line_start + 1;
}
