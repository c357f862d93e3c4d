/* Parses a batch of journal lines with jansson on several threads at once. */
#ifndef HC_PARSE_H
#define HC_PARSE_H

#include <stddef.h>

#include <jansson.h>

#include "arena.h"

#define HC_PARSE_MAX_THREADS 4

struct hc_line {
    const char *p; /* the record: the line without its newline (and crc32 member) */
    size_t n;
    const char *raw; /* the line as read, without its newline */
    size_t raw_n;
    int crc;     /* enum hc_crc: what the line ends with */
    json_t *doc; /* parsed document, or NULL with err filled */
    json_error_t err;
};

struct hc_parser {
    unsigned threads;
    int use_arenas; /* documents live in arenas (hc_arena_install ran): released by a reset */
    struct hc_arena arenas[HC_PARSE_MAX_THREADS];
};

/* Threads: the online CPUs, at most HC_PARSE_MAX_THREADS. */
void hc_parser_init(struct hc_parser *p);
void hc_parser_free(struct hc_parser *p);

/* Parses every line (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL), splitting the bytes evenly over
 * the threads; falls back to the calling thread when a thread cannot be started.
 * json_object_seed() must have run before (jansson's rule for threads). */
void hc_parse_lines(struct hc_parser *p, struct hc_line *lines, size_t n);

/* Drops the documents of the last hc_parse_lines; they must not be used after. */
void hc_parse_release(struct hc_parser *p, struct hc_line *lines, size_t n);

#endif
