/* The feed reader: durable records after a cursor, from the segment files, with a sparse index
 * of marks so that a cursor seeks instead of scanning from the oldest segment. */
#include "feed.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "feed_segments.h"
#include "line_check.h"
#include "io.h"

#define RECEIPT_PREFIX "{\"type\":\"receipt\",\"seq\":"
#define EPOCH_PREFIX "{\"type\":\"epoch\""
#define HEADER_PREFIX "{\"type\":\"segment\",\"first_seq\":"
#define CHUNK GW_FEED_LONG_LINE
#define LONG_START (CHUNK / 4 * 3) /* a receipt line with no newline in this many bytes is long */

/* One read of the segments. */
struct scan {
    struct gw_feed *f;
    uint64_t after, durable;
    gw_feed_visit_fn visit;
    void *ctx;
    uint64_t segment; /* first_seq of the segment being read */
    int checked;      /* its lines carry checksums (docs/journal.md §2.1) */
    uint64_t checked_from;
    uint64_t active_first, active_bytes; /* lines past these bytes may be being written */
    struct gw_feed_fault *fault;
    uint64_t prev_seq;  /* the last receipt seq met, or first_seq - 1 */
    int repeat_next;    /* 1 after a header: the next epoch record is a repeat, not delivered */
    struct gw_buf held; /* epoch records waiting for their first receipt, '\n' after each */
    uint64_t last;
    uint64_t marked;         /* receipts <= it are past the index's last mark already */
    struct gw_feed_mark pos; /* just after the last receipt passed (seq 0: none yet) */
    int done;                /* 1 once the visitor stopped or a receipt past the bound was met */
};

int gw_feed_init(struct gw_feed *f, const char *state_dir)
{
    memset(f, 0, sizeof(*f));
    f->dir = strdup(state_dir);
    if (!f->dir)
        return -ENOMEM;
    pthread_mutex_init(&f->lock, NULL);
    return 0;
}

void gw_feed_free(struct gw_feed *f)
{
    if (!f->dir)
        return;
    pthread_mutex_destroy(&f->lock);
    gw_feed_segments_free(&f->listed);
    free(f->marks);
    free(f->dir);
    memset(f, 0, sizeof(*f));
}

void gw_feed_durable(struct gw_feed *f, uint64_t seq)
{
    pthread_mutex_lock(&f->lock);
    f->durable_seq = seq;
    pthread_mutex_unlock(&f->lock);
}

void gw_feed_active_segment(struct gw_feed *f, uint64_t first_seq, uint64_t durable_bytes)
{
    pthread_mutex_lock(&f->lock);
    f->active_first = first_seq;
    f->active_bytes = durable_bytes;
    pthread_mutex_unlock(&f->lock);
}

/* The segments to read: a copy of the kept listing while its active segment is the announced
 * one, else a fresh listing (kept when it agrees with the announcement). */
static int list_segments(struct gw_feed *f, struct gw_feed_segments *out)
{
    pthread_mutex_lock(&f->lock);
    uint64_t active = f->active_first;
    int kept = active && f->listed.count && f->listed.list[f->listed.count - 1].active &&
               f->listed.list[f->listed.count - 1].first_seq == active;
    int rc = kept ? gw_feed_segments_copy(&f->listed, out) : 1;
    pthread_mutex_unlock(&f->lock);
    if (rc <= 0)
        return rc;
    rc = gw_feed_segments_list(f->dir, out);
    if (rc != 0 || !out->count || !out->list[out->count - 1].active ||
        out->list[out->count - 1].first_seq != active)
        return rc;
    struct gw_feed_segments copy;
    if (gw_feed_segments_copy(out, &copy) != 0)
        return 0; /* not kept: the next read lists again */
    pthread_mutex_lock(&f->lock);
    gw_feed_segments_free(&f->listed);
    f->listed = copy;
    pthread_mutex_unlock(&f->lock);
    return 0;
}

void gw_feed_checked_from(struct gw_feed *f, uint64_t first_seq)
{
    pthread_mutex_lock(&f->lock);
    f->checked_from = first_seq;
    pthread_mutex_unlock(&f->lock);
}

uint64_t gw_feed_durable_seq(struct gw_feed *f)
{
    pthread_mutex_lock(&f->lock);
    uint64_t seq = f->durable_seq;
    pthread_mutex_unlock(&f->lock);
    return seq;
}

/* 1 when receipt `seq` ending at (segment, offset) deserves a mark after `last`. */
static int mark_due(const struct gw_feed_mark *last, uint64_t seq, uint64_t segment,
                    uint64_t offset)
{
    if (!last)
        return seq % GW_FEED_MARK_EVERY == 0 || offset >= GW_FEED_MARK_BYTES;
    if (last->seq >= seq)
        return 0;
    return seq % GW_FEED_MARK_EVERY == 0 || last->segment != segment ||
           offset - last->offset >= GW_FEED_MARK_BYTES;
}

/* Marks only grow at their end, so they stay sorted by seq (a failed allocation just leaves
 * the index sparser). */
static void add_mark(struct gw_feed *f, uint64_t seq, uint64_t segment, uint64_t offset)
{
    pthread_mutex_lock(&f->lock);
    if (mark_due(f->nmarks ? &f->marks[f->nmarks - 1] : NULL, seq, segment, offset)) {
        if (f->nmarks == f->cap) {
            size_t n = f->cap ? f->cap * 2 : 64;
            struct gw_feed_mark *m = realloc(f->marks, n * sizeof(*m));
            if (m) {
                f->marks = m;
                f->cap = n;
            }
        }
        if (f->nmarks < f->cap)
            f->marks[f->nmarks++] = (struct gw_feed_mark){seq, segment, offset};
    }
    pthread_mutex_unlock(&f->lock);
}

/* The last mark with seq <= after; 0 when there is none. */
static int find_mark(struct gw_feed *f, uint64_t after, struct gw_feed_mark *out)
{
    int found = 0;
    pthread_mutex_lock(&f->lock);
    size_t lo = 0, hi = f->nmarks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->marks[mid].seq <= after)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0) {
        *out = f->marks[lo - 1];
        found = 1;
    }
    pthread_mutex_unlock(&f->lock);
    return found;
}

/* Delivers the held epoch records, then the receipt. */
static int deliver_receipt(struct scan *s, const struct gw_feed_record *r)
{
    for (size_t at = 0; at < s->held.len;) {
        const char *nl = memchr(s->held.data + at, '\n', s->held.len - at);
        size_t n = (size_t)(nl - (s->held.data + at));
        struct gw_feed_record e = {GW_FEED_EPOCH, r->seq, s->held.data + at, n, NULL};
        int rc = s->visit(s->ctx, &e);
        if (rc < 0)
            return rc;
        at += n + 1;
    }
    gw_buf_reset(&s->held);
    int rc = s->visit(s->ctx, r);
    s->last = r->seq;
    if (rc == 1)
        s->done = 1;
    return rc < 0 ? rc : 0;
}

/* A receipt whose line ends at `end` (the offset just after its newline). */
static int on_receipt(struct scan *s, const struct gw_feed_record *r, uint64_t end)
{
    if (r->seq > s->durable) {
        s->done = 1;
        return 0;
    }
    s->prev_seq = r->seq;
    s->pos = (struct gw_feed_mark){r->seq, s->segment, end};
    if (r->seq > s->marked) /* new ground: add_mark decides */
        add_mark(s->f, r->seq, s->segment, end);
    if (r->seq <= s->after) {
        gw_buf_reset(&s->held);
        return 0;
    }
    return deliver_receipt(s, r);
}

/* 1 when a segment is being written past `end`: a line ending there may not be whole or synced. */
static int past_bound(const struct scan *s, uint64_t end)
{
    return s->active_first && s->segment == s->active_first && end > s->active_bytes;
}

/* A checked line made its record in place (its crc32 member dropped), or the fault noted. */
static int line_record(struct scan *s, char *line, size_t *len, uint64_t end)
{
    size_t body;
    int rc = s->checked ? gw_record_check(line, *len, &body) : 0;
    if (rc != 0) {
        *s->fault = (struct gw_feed_fault){
            .segment = s->segment, .offset = end - *len - 1, .seq = s->prev_seq + 1};
        return rc;
    }
    if (s->checked) {
        line[body] = '}';
        *len = body + 1;
    }
    return 0;
}

/* One line of a segment; `end` is the offset just after its newline. */
static int on_line(struct scan *s, char *line, size_t len, uint64_t end)
{
    if (past_bound(s, end)) {
        s->done = 1; /* not yet durable: perhaps still being written */
        return 0;
    }
    int rc = line_record(s, line, &len, end);
    if (rc != 0)
        return rc;
    uint64_t seq = gw_feed_number_after(line, len, RECEIPT_PREFIX);
    if (seq) {
        struct gw_feed_record r = {GW_FEED_RECEIPT, seq, line, len, NULL};
        return on_receipt(s, &r, end);
    }
    uint64_t first = gw_feed_number_after(line, len, HEADER_PREFIX);
    if (first) {
        s->prev_seq = first - 1;
        s->repeat_next = 1;
        return 0;
    }
    if (len < strlen(EPOCH_PREFIX) || memcmp(line, EPOCH_PREFIX, strlen(EPOCH_PREFIX)) != 0)
        return 0; /* a seal line */
    if (s->repeat_next) {
        s->repeat_next = 0; /* the epoch in force, repeated: delivered where it was first */
        return 0;
    }
    if (s->prev_seq + 1 <= s->after)
        return 0;
    gw_buf_append(&s->held, line, len);
    gw_buf_puts(&s->held, "\n");
    return s->held.failed ? -ENOMEM : 0;
}

/* The whole lines of buf[0..len) from file offset `base`; returns the bytes consumed. */
static int scan_lines(struct scan *s, char *buf, size_t len, uint64_t base, size_t *used)
{
    size_t at = 0;
    int rc = 0;
    while (rc == 0 && !s->done && at < len) {
        const char *nl = memchr(buf + at, '\n', len - at);
        if (!nl)
            break;
        size_t n = (size_t)(nl - (buf + at));
        rc = on_line(s, buf + at, n, base + at + n + 1);
        at += n + 1;
    }
    *used = at;
    return rc;
}

/* The long receipt whose line runs from `start` to `nl` (its newline at file offset nl): its
 * last GW_RECORD_TAIL bytes are tail[], `crc` covers the bytes before them (or, unchecked, the
 * whole line; tail NULL: the line is shorter than a checksum member), and it is checked, then
 * delivered with its bytes left in the file. */
static int long_found(struct scan *s, int fd, uint64_t seq, uint64_t start, uint64_t nl,
                      const char *tail, unsigned long crc)
{
    if (past_bound(s, nl + 1)) {
        s->done = 1; /* not yet durable: perhaps still being written */
        return 0;
    }
    struct gw_feed_long l = {fd, s->segment, start, nl - start, s->checked, crc};
    int rc = !s->checked ? 0 : tail ? gw_record_check_tail(tail, crc) : -ENOMSG;
    if (rc != 0) {
        *s->fault =
            (struct gw_feed_fault){.segment = s->segment, .offset = start, .seq = s->prev_seq + 1};
        return rc;
    }
    if (s->checked)
        l.bytes -= GW_RECORD_TAIL;
    struct gw_feed_record r = {GW_FEED_RECEIPT, seq, NULL, (size_t)gw_feed_long_len(&l), &l};
    return on_receipt(s, &r, nl + 1);
}

/* A receipt line longer than LONG_START from file offset *offset, whose first b->len bytes are in
 * b: read to its newline in pieces, its checksum computed on the way, and delivered as a long
 * receipt (feed_record.h) without ever being held whole. Leaves b empty and *offset just after
 * the line; an unterminated line (still being written) ends the read. */
static int long_receipt(struct scan *s, int fd, struct gw_buf *b, uint64_t *offset)
{
    uint64_t seq = gw_feed_number_after(b->data, b->len, RECEIPT_PREFIX);
    uint64_t start = *offset, at = start; /* at: the file offset of b->data[0] */
    unsigned long crc = crc32(0L, Z_NULL, 0);
    for (;;) {
        const char *nl = memchr(b->data, '\n', b->len);
        if (nl) {
            size_t i = (size_t)(nl - b->data), keep = s->checked ? GW_RECORD_TAIL : 0;
            const char *tail = i >= keep ? nl - keep : NULL;
            crc = crc32(crc, (const Bytef *)b->data, (uInt)(tail ? i - keep : i));
            int rc = long_found(s, fd, seq, start, at + i, tail, crc);
            *offset = at + i + 1;
            b->len = 0;
            return rc;
        }
        size_t keep = b->len < GW_RECORD_TAIL ? b->len : GW_RECORD_TAIL;
        crc = crc32(crc, (const Bytef *)b->data, (uInt)(b->len - keep));
        memmove(b->data, b->data + b->len - keep, keep);
        at += b->len - keep;
        b->len = keep;
        ssize_t n = pread(fd, b->data + keep, b->cap - keep, (off_t)(at + keep));
        if (n < 0)
            return -errno;
        if (n == 0) {
            s->done = 1; /* an unterminated line is never read as a record */
            return 0;
        }
        b->len += (size_t)n;
    }
}

/* Reads one segment file from `offset` to its end or the bound. */
static int scan_file(struct scan *s, int fd, uint64_t offset)
{
    struct gw_buf b;
    gw_buf_init(&b);
    int rc = gw_buf_reserve(&b, CHUNK) ? -ENOMEM : 0;
    while (rc == 0 && !s->done) {
        /* What scan_lines left is the start of a line: a receipt's is read in pieces. */
        if (b.len >= LONG_START && gw_feed_number_after(b.data, b.len, RECEIPT_PREFIX)) {
            rc = long_receipt(s, fd, &b, &offset);
            continue;
        }
        if (b.cap - b.len < CHUNK / 4 && gw_buf_reserve(&b, b.cap)) {
            rc = -ENOMEM; /* another record longer than the buffer: grow it */
            break;
        }
        ssize_t n = pread(fd, b.data + b.len, b.cap - b.len, (off_t)(offset + b.len));
        if (n <= 0) {
            rc = n < 0 ? -errno : 0;
            break;
        }
        b.len += (size_t)n;
        size_t used = 0;
        rc = scan_lines(s, b.data, b.len, offset, &used);
        memmove(b.data, b.data + used, b.len - used);
        b.len -= used;
        offset += used;
    }
    gw_buf_free(&b);
    return rc;
}

static int scan_segment(struct scan *s, const struct gw_feed_segment *seg, uint64_t offset)
{
    char name[64], path[4200];
    gw_feed_segment_name(seg, name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s", s->f->dir, name);
    int fd = gw_io.open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0 && errno == ENOENT && seg->active) {
        s->done = 1; /* the writer is rotating: the active segment is being sealed under its
                        new name, which a later read lists (nothing past here is delivered) */
        return 0;
    }
    if (fd < 0)
        return -errno;
    s->segment = seg->first_seq;
    s->checked = seg->first_seq >= s->checked_from;
    if (offset == 0) {
        s->prev_seq = seg->first_seq - 1;
        s->repeat_next = 0;
    }
    int rc = scan_file(s, fd, offset);
    close(fd);
    return rc;
}

/* Where a read after `after` starts: a segment index and an offset in it. */
static size_t start_at(struct scan *s, const struct gw_feed_segments *segs,
                       const struct gw_feed_mark *hint, uint64_t *offset)
{
    struct gw_feed_mark m;
    *offset = 0;
    if (hint && hint->seq == s->after && hint->seq > 0)
        m = *hint;
    else if (!find_mark(s->f, s->after, &m))
        return 0;
    for (size_t i = 0; i < segs->count; i++)
        if (segs->list[i].first_seq == m.segment) {
            *offset = m.offset;
            s->prev_seq = m.seq;
            return i;
        }
    return 0;
}

static int read_segments(struct scan *s, const struct gw_feed_segments *segs,
                         const struct gw_feed_mark *hint)
{
    uint64_t offset;
    int rc = 0;
    for (size_t i = start_at(s, segs, hint, &offset); rc == 0 && !s->done && i < segs->count; i++) {
        const struct gw_feed_segment *seg = &segs->list[i];
        if (seg->first_seq > s->durable)
            break; /* a segment made after the bound holds nothing durable yet */
        rc = scan_segment(s, seg, offset);
        offset = 0;
    }
    return rc;
}

int gw_feed_read(struct gw_feed *f, uint64_t after, gw_feed_visit_fn visit, void *ctx,
                 struct gw_feed_mark *pos, uint64_t *last, struct gw_feed_fault *fault)
{
    struct scan s = {
        .f = f, .after = after, .visit = visit, .ctx = ctx, .last = after, .fault = fault};
    pthread_mutex_lock(&f->lock);
    s.durable = f->durable_seq;
    s.checked_from = f->checked_from;
    s.active_first = f->active_first;
    s.active_bytes = f->active_bytes;
    s.marked = f->nmarks ? f->marks[f->nmarks - 1].seq : 0;
    pthread_mutex_unlock(&f->lock);
    *last = after;
    if (after >= s.durable)
        return 0;
    struct gw_feed_segments segs;
    int rc = list_segments(f, &segs);
    if (rc != 0)
        return rc;
    if (segs.count && after + 1 < segs.list[0].first_seq) {
        fault->earliest = segs.list[0].first_seq;
        gw_feed_segments_free(&segs);
        return -ESTALE;
    }
    gw_buf_init(&s.held);
    rc = read_segments(&s, &segs, pos);
    gw_buf_free(&s.held);
    gw_feed_segments_free(&segs);
    *last = s.last;
    if (pos && rc == 0 && s.pos.seq == s.last && s.last > after)
        *pos = s.pos; /* where the next read, after s.last, starts */
    return rc;
}
