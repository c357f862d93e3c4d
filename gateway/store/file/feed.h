/* The assignment feed's reader (docs/api.md §17, §18): the journal's records after a cursor, in
 * order, read from the segment files of the state dir (docs/journal.md §6), a sparse
 * seq -> (segment, offset) index so a cursor seeks without scanning from the start, and the
 * durable bound announced by the journal writer after each group. */
#ifndef SHARDGATE_GW_FEED_H
#define SHARDGATE_GW_FEED_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "feed_record.h"
#include "feed_segments.h"

struct gw_feed {
    char *dir;
    pthread_mutex_t lock; /* the bound, the marks and the kept listing */
    uint64_t durable_seq; /* every receipt <= it is durable; nothing after it is delivered */
    struct gw_feed_mark *marks;
    size_t nmarks, cap;
    uint64_t active_first;          /* the active segment as the writer announced it; 0: unknown */
    uint64_t active_bytes;          /* its bytes of whole, durable lines then */
    uint64_t checked_from;          /* segments from this first_seq on carry line checksums */
    struct gw_feed_segments listed; /* the last listing whose active segment was active_first */
};

/* The reader leaves a mark every this many receipts, or this many bytes after the last mark
 * (large receipts: 4,000 marks per GB, 96 KB), or at a segment's first receipt. */
#define GW_FEED_MARK_EVERY 1024u
#define GW_FEED_MARK_BYTES (256u << 10)

/* Starts empty: nothing is durable until gw_feed_durable. Returns 0 or -ENOMEM. */
int gw_feed_init(struct gw_feed *f, const char *state_dir);
void gw_feed_free(struct gw_feed *f);

/* The journal writer, after each group: every receipt <= seq is durable. A line past the bound
 * (written, not yet synced) is never delivered: receipts by their seq, epoch records only with
 * the durable receipt that follows them; an unterminated line is never read as a record. */
void gw_feed_durable(struct gw_feed *f, uint64_t seq);

/* The journal writer, with each announcement: the active segment's first_seq. A listing of the
 * state dir whose active segment is that one is kept and used by the reads until the writer
 * announces another (segments change only by the writer's rotation while a server runs,
 * docs/journal.md §8); without an announcement every read lists the dir. `durable_bytes`: the
 * active segment's bytes of whole, synced lines; a line past them may still be being written,
 * so it is neither checked nor delivered. */
void gw_feed_active_segment(struct gw_feed *f, uint64_t first_seq, uint64_t durable_bytes);

/* At start: the segments whose first_seq is at least `first_seq` carry a checksum on every line
 * (docs/journal.md §2.1), checked before a line is delivered; those before it were written
 * before checksums. Until it is called every segment counts as checked. */
void gw_feed_checked_from(struct gw_feed *f, uint64_t first_seq);

/* Why a read stopped short. */
struct gw_feed_fault {
    uint64_t earliest;             /* -ESTALE: the first_seq of the oldest segment present */
    uint64_t segment, offset, seq; /* a damaged line: where it starts, the seq it has or precedes */
};

/* The durable bound now. */
uint64_t gw_feed_durable_seq(struct gw_feed *f);

/* Visits the durable records after cursor `after` in journal order: each receipt with seq >
 * after, each epoch record just before the receipt whose first_seq it has (so an epoch record
 * waits for its first receipt). *last gets the seq of the last receipt visited (`after` when
 * none). `pos` (may be NULL) is a caller's position: where the previous read stopped, used when
 * its seq is `after` (a waiter re-reading after a wake seeks no mark), then updated. Returns 0;
 * -ESTALE when `after` is older than the oldest segment present (fault->earliest = its
 * first_seq); -EBADMSG or -ENOMSG when a line read fails its checksum (fault->segment, offset,
 * seq; nothing of it is visited); -EIO/-errno when a segment cannot be read; or the visitor's
 * negative code. */
int gw_feed_read(struct gw_feed *f, uint64_t after, gw_feed_visit_fn visit, void *ctx,
                 struct gw_feed_mark *pos, uint64_t *last, struct gw_feed_fault *fault);

#endif
