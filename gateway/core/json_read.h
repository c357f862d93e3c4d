/* A strict JSON reader (RFC 8259) into a flat node array, built for batch parsing. */
#ifndef SHARDGATE_GW_JSON_READ_H
#define SHARDGATE_GW_JSON_READ_H

#include <stddef.h>
#include <stdint.h>

enum jtype { J_NULL, J_FALSE, J_TRUE, J_INT, J_REAL, J_STRING, J_ARRAY, J_OBJECT };

/* One value. Children of an array or object are linked by `next` in document order; node 0
 * is the root, so index 0 also means "none". Strings (and member names) point into the
 * document's arena, unescaped, valid UTF-8, and may hold NUL bytes (from \u0000). */
struct jnode {
    uint32_t type;
    uint32_t next;    /* next sibling, 0 at the end */
    uint32_t first;   /* first child of an array or object, 0 when empty */
    uint32_t count;   /* number of children */
    uint32_t len;     /* J_STRING: bytes */
    uint32_t key_len; /* member name bytes, when the parent is an object */
    const char *str;  /* J_STRING */
    const char *key;  /* member name, when the parent is an object */
    int64_t num;      /* J_INT; J_REAL keeps no value (nothing here needs one) */
};

struct jdoc {
    struct jnode *nodes;
    size_t count;
    char *arena;     /* every string of the document; the caller may take it over */
    size_t error_at; /* on -EINVAL or -E2BIG: byte offset of the fault */
    char what[160];  /* on -EINVAL or -E2BIG: what is wrong there */
    char path[160];  /* on -E2BIG: JSON path of the value past the budget ("changes[3].id") */
};

/* Budgets that stop the reader as soon as the document holds more than its caller could
 * accept, so that what it builds is bounded by the caller's schema, not by the input
 * (0: no budget). */
struct json_limits {
    size_t max_values;   /* values in the whole document (one node each) */
    size_t max_elements; /* array elements, summed over every array of the document */
};

/* Reads one JSON document of `len` bytes. Any value may be at the top. Rejects duplicate
 * member names, invalid UTF-8, lone surrogates, control characters in strings, integers
 * outside int64, nesting deeper than 512, \u0000 in member names and anything after the
 * document. Stops at the first value past a budget of `limits` (NULL: none). Returns 0,
 * -EINVAL (d->what, d->error_at), -E2BIG (d->what, d->error_at, d->path) or -ENOMEM;
 * always json_doc_free(). */
int json_read(const char *data, size_t len, const struct json_limits *limits, struct jdoc *d);

void json_doc_free(struct jdoc *d);

/* The 1-based line and byte column of offset `at` in `data`. */
void json_position(const char *data, size_t at, size_t *line, size_t *column);

#endif
