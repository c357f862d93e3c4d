/* Parses a batch of journal lines with jansson on several threads at once. */
#ifndef HC_PARSE_H
#define HC_PARSE_H

#include <stddef.h>

#include <jansson.h>

struct hc_line {
    const char *p; /* the line, without its newline */
    size_t n;
    json_t *doc; /* parsed document, or NULL with err filled */
    json_error_t err;
};

/* Parses every line (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL), splitting the bytes evenly over
 * up to `threads` threads; falls back to the calling thread alone when a thread cannot be
 * started. json_object_seed() must have run before (jansson's rule for threads). */
void hc_parse_lines(struct hc_line *lines, size_t n, unsigned threads);

/* Threads worth using here: the online CPUs, at most 4. */
unsigned hc_parse_threads(void);

#endif
