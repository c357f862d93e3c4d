/* A growable byte buffer for text health renders itself (checkpoint expectations). */
#ifndef HC_TEXT_H
#define HC_TEXT_H

#include <stddef.h>
#include <stdint.h>

struct hc_text {
    char *p;
    size_t n, cap;
};

/* Each returns 0 or -ENOMEM; the text stays NUL-terminated. */
int hc_text_add(struct hc_text *t, const char *s, size_t n);
int hc_text_str(struct hc_text *t, const char *s);
int hc_text_printf(struct hc_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An unsigned 128-bit integer in plain decimal digits. */
int hc_text_u128(struct hc_text *t, unsigned __int128 v);
void hc_text_free(struct hc_text *t);

#endif
