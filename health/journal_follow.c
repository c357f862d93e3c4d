/* Journal follower: reads journal.jsonl on from where the last read ended. */
/* The sealed segments come first (segment_read.c); a file that was replaced, cut or rewritten
 * is read again from its start. The lines themselves are verified by journal.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "journal.h"

/* Whether the bytes just before j->offset are still the ones consumed last time. */
static int hc_journal_same_prefix(const struct hc_journal *j, int fd)
{
    if (j->tail_len == 0)
        return 1;
    unsigned char now[sizeof j->tail];
    ssize_t got = pread(fd, now, j->tail_len, j->offset - (off_t)j->tail_len);
    return got == (ssize_t)j->tail_len && memcmp(now, j->tail, j->tail_len) == 0;
}

/* Keeps the last bytes of everything consumed: the old tail followed by the n bytes before end. */
static void hc_journal_remember_tail(struct hc_journal *j, const char *end, size_t n)
{
    size_t max = sizeof j->tail;
    if (n >= max) {
        memcpy(j->tail, end - max, max);
        j->tail_len = max;
        return;
    }
    size_t keep = j->tail_len < max - n ? j->tail_len : max - n;
    memmove(j->tail, j->tail + j->tail_len - keep, keep);
    memcpy(j->tail + keep, end - n, n);
    j->tail_len = keep + n;
}

/* Opens the journal; a file that was replaced, cut or rewritten since the last read is read
 * again from its start. Returns the fd, or a negative code with err set. */
static int hc_journal_open_same(struct hc_journal *j, struct hc_err *err)
{
    int fd = open(j->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return hc_err_set(err, -e, "%s: cannot open: %s", j->path, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return hc_err_set(err, -e, "%s: cannot stat: %s", j->path, strerror(e));
    }
    if (j->have_identity && (st.st_dev != j->dev || st.st_ino != j->ino || st.st_size < j->offset ||
                             !hc_journal_same_prefix(j, fd))) {
        hc_journal_forget(j);
        j->resets++;
    }
    j->dev = st.st_dev;
    j->ino = st.st_ino;
    j->have_identity = 1;
    return fd;
}

/* Reads and verifies from j->offset to the end of the file. */
static int hc_journal_read_new(struct hc_journal *j, struct hc_err *err)
{
    int fd = hc_journal_open_same(j, err);
    if (fd < 0)
        return fd;
    int rc = j->seg == NULL ? hc_seg_open(j, err) : 0;
    if (rc != 0) {
        close(fd);
        return rc;
    }
    /* The read buffer is kept from call to call: a re-read after an out-of-memory needs no new
     * 4 MiB before it can get as far as the allocation that failed. */
    if (j->buf == NULL) {
        j->buf = malloc(4 << 20);
        if (j->buf == NULL) {
            close(fd);
            return hc_err_set(err, -ENOMEM, "out of memory");
        }
        j->buf_cap = 4 << 20;
    }
    size_t cap = j->buf_cap, len = 0;
    char *buf = j->buf;
    off_t at = j->offset;
    for (;;) {
        if (len == cap) {
            char *grown = realloc(buf, cap * 2);
            if (grown == NULL) {
                rc = hc_err_set(err, -ENOMEM, "out of memory (a journal line over %zu bytes)", cap);
                break;
            }
            buf = j->buf = grown;
            cap = j->buf_cap = cap * 2;
        }
        ssize_t got = pread(fd, buf + len, cap - len, at);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int e = errno;
            rc = hc_err_set(err, -e, "%s: read error: %s", j->path, strerror(e));
            break;
        }
        if (got == 0)
            break;
        at += got;
        len += (size_t)got;
        size_t start = 0;
        rc = hc_journal_lines(j, buf, len, &start, err);
        if (start > 0) {
            hc_journal_remember_tail(j, buf + start, start);
            j->offset += (off_t)start;
            memmove(buf, buf + start, len - start);
            len -= start;
        }
        if (rc != 0)
            break;
    }
    j->pending = len;
    close(fd);
    return rc;
}

int hc_journal_update(struct hc_journal *j, struct hc_err *err)
{
    if (j->reread) {
        hc_journal_forget(j);
        j->reread = 0;
    }
    int rc = hc_journal_read_new(j, err);
    if (rc != 0)
        j->reread = 1;
    return rc;
}
