/* A growable byte buffer for text health renders itself (checkpoint expectations). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

int hc_text_add(struct hc_text *t, const char *s, size_t n)
{
    if (t->n + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->n + n + 1)
            cap *= 2;
        char *p = realloc(t->p, cap);
        if (p == NULL)
            return -ENOMEM;
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->n, s, n);
    t->n += n;
    t->p[t->n] = '\0';
    return 0;
}

int hc_text_str(struct hc_text *t, const char *s)
{
    return hc_text_add(t, s, strlen(s));
}

int hc_text_printf(struct hc_text *t, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf)
        return -ENOMEM;
    return hc_text_add(t, buf, (size_t)n);
}

int hc_text_u128(struct hc_text *t, unsigned __int128 v)
{
    char digits[40];
    size_t n = sizeof digits;
    do {
        digits[--n] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v != 0);
    return hc_text_add(t, digits + n, sizeof digits - n);
}

void hc_text_free(struct hc_text *t)
{
    free(t->p);
    memset(t, 0, sizeof *t);
}
