/* A receipt's placements read straight from its bytes, without a JSON tree: the receipt of a
 * journal record is always the fixed compact form of docs/contract.md §5, so its keys come in
 * a known order. Spans are JSON strings as written, quotes included, ready to copy. */
#ifndef SHARDGATE_GW_FEED_PLACEMENTS_H
#define SHARDGATE_GW_FEED_PLACEMENTS_H

#include <stddef.h>
#include <stdint.h>

struct gw_feed_span {
    const char *p;
    size_t n;
};

/* What an assignment needs from the receipt around it. */
struct gw_feed_receipt {
    struct gw_feed_span batch_id;
    struct gw_feed_span epoch; /* n 0: a version 1 receipt, which names no epoch */
    const char *at;            /* the next placement */
    const char *end;           /* the end of the record line */
};

struct gw_feed_placement {
    struct gw_feed_span id, key, shard;
    uint64_t size;
};

/* Reads the head of the receipt inside a receipt record line. Returns 0 or -EINVAL. */
int gw_feed_receipt_open(const char *line, size_t len, struct gw_feed_receipt *out);

/* The next placement; returns 1, 0 after the last one, or -EINVAL. */
int gw_feed_receipt_next(struct gw_feed_receipt *r, struct gw_feed_placement *out);

#endif
