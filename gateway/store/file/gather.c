/* Bytes written as one: own runs between borrowed spans (gather.h). */
#include "gather.h"

#include <stdlib.h>

void gw_gather_init(struct gw_gather *g)
{
    *g = (struct gw_gather){0};
    gw_buf_init(&g->own);
}

void gw_gather_free(struct gw_gather *g)
{
    gw_buf_free(&g->own);
    free(g->spans);
    free(g->iov);
    gw_gather_init(g);
}

void gw_gather_reset(struct gw_gather *g)
{
    gw_buf_reset(&g->own);
    g->run_from = g->borrowed = g->count = 0;
    g->failed = 0;
}

static void add_span(struct gw_gather *g, const char *borrowed, size_t at, size_t len)
{
    if (len == 0 || g->failed)
        return;
    if (g->count == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 64;
        struct gw_gather_span *spans = realloc(g->spans, cap * sizeof(*spans));
        if (spans)
            g->spans = spans;
        struct iovec *iov = spans ? realloc(g->iov, cap * sizeof(*iov)) : NULL;
        if (iov)
            g->iov = iov;
        if (!iov) {
            g->failed = 1;
            return;
        }
        g->cap = cap;
    }
    g->spans[g->count++] = (struct gw_gather_span){borrowed, at, len};
}

/* Closes own's run so far as a span. */
static void end_run(struct gw_gather *g)
{
    add_span(g, NULL, g->run_from, g->own.len - g->run_from);
    g->run_from = g->own.len;
}

void gw_gather_borrow(struct gw_gather *g, const char *data, size_t len)
{
    end_run(g);
    add_span(g, data, 0, len);
    g->borrowed += len;
}

const struct iovec *gw_gather_iov(struct gw_gather *g, int *n)
{
    end_run(g);
    *n = 0;
    if (g->failed || g->own.failed)
        return NULL;
    for (size_t i = 0; i < g->count; i++) {
        const struct gw_gather_span *s = &g->spans[i];
        g->iov[i].iov_base = (void *)(s->borrowed ? s->borrowed : g->own.data + s->at);
        g->iov[i].iov_len = s->len;
    }
    *n = (int)g->count;
    return g->iov;
}
