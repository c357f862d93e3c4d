/* Bytes written as one (one writev): runs of a buffer the writer fills, kept as offsets while it
 * grows, between spans it borrows (a receipt in its request's buffer), so that a group's
 * receipts reach the journal without being copied into it first (docs/performance.md §19.5). */
#ifndef SHARDGATE_GW_GATHER_H
#define SHARDGATE_GW_GATHER_H

#include <stddef.h>
#include <sys/uio.h>

#include "buf.h"

struct gw_gather_span {
    const char *borrowed; /* NULL: own->data + at */
    size_t at, len;
};

struct gw_gather {
    struct gw_buf own; /* the writer's bytes: record prefixes, checksums, epoch records */
    size_t run_from;   /* where own's current run starts */
    size_t borrowed;   /* the bytes of the borrowed spans */
    struct gw_gather_span *spans;
    struct iovec *iov;
    size_t count, cap;
    int failed; /* an allocation failed */
};

void gw_gather_init(struct gw_gather *g);
void gw_gather_free(struct gw_gather *g);
void gw_gather_reset(struct gw_gather *g);

/* Every byte so far, own and borrowed. */
static inline size_t gw_gather_len(const struct gw_gather *g)
{
    return g->own.len + g->borrowed;
}

/* Appends `len` bytes at `data`, which stay where they are until the write. */
void gw_gather_borrow(struct gw_gather *g, const char *data, size_t len);

/* Ends the last run of own bytes; *n gets the number of iovecs (NULL after a failed
 * allocation). */
const struct iovec *gw_gather_iov(struct gw_gather *g, int *n);

#endif
