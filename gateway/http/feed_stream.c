/* Long receipts sent from their segment files in blocks (feed_stream.h). */
#include "feed_stream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "request.h"

#define BLOCK (64u << 10) /* what libmicrohttpd asks for at a time */

struct stream {
    struct gw_server *srv;
    struct gw_feed_body *page;
    uint64_t sent;
    unsigned long crc; /* of the long receipt's bytes sent so far */
};

static void damaged(struct stream *st, int rc)
{
    char file[GW_STORE_FILE_NAME_MAX];
    const struct gw_feed_long *l = &st->page->whole;
    atomic_store(&st->page->damaged, 1); /* the next reader reads and checks it afresh */
    gw_store_segment_file(st->srv->store, l->segment, file);
    atomic_fetch_add(&st->srv->metrics.record_damage, 1);
    struct gw_buf f;
    gw_buf_init(&f);
    gw_log_str(&f, "file", file);
    gw_log_u64(&f, "offset", l->offset);
    gw_log_str(&f, "what",
               rc == -EBADMSG ? "changed since it was checked: the feed answer was cut short"
                              : "cannot be read again: the feed answer was cut short");
    gw_log_event("record_checksum_failed", &f);
}

/* Bytes [pos, pos + max) of the page: the body's before the long receipt, its record, then the
 * body's after it. */
static ssize_t read_page(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct stream *st = cls;
    const struct gw_feed_body *p = st->page;
    uint64_t head = p->whole_at, whole = gw_feed_long_len(&p->whole), total = p->len + whole;
    if (pos != st->sent)
        return MHD_CONTENT_READER_END_WITH_ERROR; /* sent in order, each byte once */
    if (pos >= total)
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n;
    if (pos < head) {
        n = (size_t)(head - pos) < max ? (size_t)(head - pos) : max;
        memcpy(buf, p->data + pos, n);
    } else if (pos < head + whole) {
        long got = gw_feed_long_read(&p->whole, pos - head, buf, max, &st->crc);
        if (got <= 0) {
            damaged(st, got < 0 ? (int)got : -EIO);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        n = (size_t)got;
    } else {
        n = (size_t)(total - pos) < max ? (size_t)(total - pos) : max;
        memcpy(buf, p->data + (pos - whole), n);
    }
    st->sent += n;
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    struct stream *st = cls;
    gw_feed_body_unref(st->page);
    free(st);
}

struct MHD_Response *gw_feed_stream_response(struct gw_server *s, struct gw_feed_body *page)
{
    struct stream *st = malloc(sizeof(*st));
    if (!st) {
        gw_feed_body_unref(page);
        return NULL;
    }
    *st = (struct stream){s, page, 0, gw_feed_long_crc_start()};
    uint64_t total = page->len + gw_feed_long_len(&page->whole);
    struct MHD_Response *resp =
        MHD_create_response_from_callback(total, BLOCK, read_page, st, stream_free);
    if (!resp)
        stream_free(st);
    return resp;
}
