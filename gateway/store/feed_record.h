/* What a feed read visits, from either store (docs/api.md §17): the file journal's reader
 * (feed.h) and the PostgreSQL store's (pg/pg_store.h) hand the same records to the same
 * visitor. */
#ifndef SHARDGATE_GW_FEED_RECORD_H
#define SHARDGATE_GW_FEED_RECORD_H

#include <stddef.h>
#include <stdint.h>

enum gw_feed_kind { GW_FEED_RECEIPT, GW_FEED_EPOCH };

/* A place in the feed: the byte just after receipt `seq`'s line in segment `segment`. The file
 * journal's reader keeps its index marks so and seeks a reader's re-read there; the PostgreSQL
 * store reads by seq alone. */
struct gw_feed_mark {
    uint64_t seq, segment, offset;
};

/* A receipt whose line is longer than GW_FEED_LONG_LINE (the state dir's store only): its bytes
 * stay in the segment file, checked once when it was met, and are read in pieces by whoever
 * sends them (docs/api.md §17). The record is the file's bytes [offset, offset + bytes),
 * followed by a closing '}' when `checked` (the line's checksum member dropped,
 * docs/journal.md §2.1); `crc` is the CRC-32 of those file bytes. `fd` is open for the visit
 * only: a visitor that keeps the receipt dups it. */
struct gw_feed_long {
    int fd;
    uint64_t segment; /* the segment's first_seq, to name it */
    uint64_t offset, bytes;
    int checked;
    unsigned long crc;
};

/* A receipt line longer than this is met as a gw_feed_long; one of at most 768 KiB never is.
 * (Between the two it depends on where the line starts in the reader's buffer; the bytes a
 * visitor sends are the same either way.) */
#define GW_FEED_LONG_LINE (1u << 20)

/* A record met by gw_feed_read, borrowed for the visit only. `seq` is a receipt's seq, or the
 * seq of the receipt an epoch record comes just before (its first_seq). */
struct gw_feed_record {
    enum gw_feed_kind kind;
    uint64_t seq;
    const char *line; /* the record line, without its newline; NULL for a long receipt */
    size_t len;       /* its length; a long receipt's record length */
    const struct gw_feed_long *whole; /* a long receipt, else NULL */
};

/* The length of a long receipt's record. */
static inline uint64_t gw_feed_long_len(const struct gw_feed_long *l)
{
    return l->bytes + (l->checked ? 1 : 0);
}

/* Reads bytes [at, at + n) of a long receipt's record into buf, in order: each call must start
 * where the previous one ended (at 0 first, *crc then from gw_feed_long_crc_start), as *crc
 * follows the bytes read. Returns the bytes read (fewer than n only at the record's end);
 * -EBADMSG when the record's last byte is reached and its bytes are not the ones checked (the
 * file changed since); -EIO when the file ends early; or -errno. */
long gw_feed_long_read(const struct gw_feed_long *l, uint64_t at, char *buf, size_t n,
                       unsigned long *crc);

/* A visitor that sends a long receipt after its visit keeps it (its file held open on its own),
 * and releases it once sent. No long receipt kept: gw_feed_long_none, gw_feed_long_held 0. */
int gw_feed_long_keep(struct gw_feed_long *kept, const struct gw_feed_long *l);
void gw_feed_long_release(struct gw_feed_long *l);
static inline void gw_feed_long_none(struct gw_feed_long *l)
{
    l->fd = -1;
}
static inline int gw_feed_long_held(const struct gw_feed_long *l)
{
    return l->fd >= 0;
}

unsigned long gw_feed_long_crc_start(void);

/* Returns 0 to go on, 1 to stop after this record (a receipt), or a negative code. */
typedef int (*gw_feed_visit_fn)(void *ctx, const struct gw_feed_record *rec);

#endif
