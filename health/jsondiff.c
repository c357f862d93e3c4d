/* The first difference of two compact JSON texts, named by its path. */
#include <stdio.h>
#include <string.h>

#include "jsondiff.h"

struct hc_frame {
    char kind; /* '{' or '[' */
    long index;
    char key[48];
};

#define HC_DEPTH 16

/* End (exclusive) of the token starting at s: a string with its quotes, or a scalar. */
static size_t hc_token_end(const char *t, size_t n, size_t s)
{
    size_t i = s;
    if (i < n && t[i] == '"') {
        for (i++; i < n && t[i] != '"'; i++)
            if (t[i] == '\\')
                i++;
        return i < n ? i + 1 : n;
    }
    while (i < n && strchr(",]}:", t[i]) == NULL)
        i++;
    return i == s && i < n ? i + 1 : i;
}

static void hc_token_copy(const char *t, size_t n, size_t s, char *out, size_t cap)
{
    if (s >= n) {
        snprintf(out, cap, "(end)");
        return;
    }
    size_t e = hc_token_end(t, n, s);
    int len = (int)(e - s < cap - 1 ? e - s : cap - 1);
    snprintf(out, cap, "%.*s", len, t + s);
}

static void hc_path(const struct hc_frame *st, int depth, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; i < depth && n < cap; i++) {
        if (st[i].kind == '[')
            n += (size_t)snprintf(out + n, cap - n, "[%ld]", st[i].index);
        else if (st[i].key[0] != '\0')
            n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? "." : "", st[i].key);
    }
    if (out[0] == '\0')
        snprintf(out, cap, "$");
}

int hc_jsondiff(const char *got, size_t gn, const char *want, size_t wn, struct hc_jsondiff *d)
{
    size_t at = 0;
    while (at < gn && at < wn && got[at] == want[at])
        at++;
    if (at == gn && at == wn)
        return 0;
    struct hc_frame st[HC_DEPTH];
    int depth = 0, expect_key = 0;
    size_t i = 0, tok = at;
    while (i < at) {
        char c = want[i];
        if (c == '{' || c == '[') {
            if (depth < HC_DEPTH)
                st[depth] = (struct hc_frame){.kind = c};
            depth++;
            expect_key = c == '{';
            i++;
        } else if (c == '}' || c == ']') {
            depth--;
            i++;
        } else if (c == ':') {
            expect_key = 0;
            i++;
        } else if (c == ',') {
            if (depth > 0 && depth <= HC_DEPTH && st[depth - 1].kind == '[')
                st[depth - 1].index++;
            else
                expect_key = 1;
            i++;
        } else {
            size_t e = hc_token_end(want, wn, i);
            if (e > at) {
                tok = i; /* the difference is inside this token */
                break;
            }
            if (expect_key && depth > 0 && depth <= HC_DEPTH)
                snprintf(st[depth - 1].key, sizeof st[depth - 1].key, "%.*s",
                         (int)(e - i >= 2 ? e - i - 2 : 0), want + i + 1);
            i = e;
        }
    }
    hc_path(st, depth < HC_DEPTH ? depth : HC_DEPTH, d->path, sizeof d->path);
    hc_token_copy(got, gn, tok, d->got, sizeof d->got);
    hc_token_copy(want, wn, tok, d->want, sizeof d->want);
    return 1;
}
