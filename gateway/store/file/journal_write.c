/* The active segment's writes: lines appended durably (docs/journal.md §1), and rotation
 * (docs/journal.md §6): seal the active segment, give it its sealed name, and start the next one
 * with a header and the epoch record in force, each step durable before the next. Nothing here
 * calls back into journal.c, which opens, replays and reads. */
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crashpoint.h"
#include "fileio.h"
#include "io.h"
#include "line_check.h"
#include "timing.h"

int gw_journal_append(struct gw_journal *j, const char *data, size_t len, uint64_t *sync_ns,
                      struct gw_error *err)
{
    struct iovec one = {(void *)data, len};
    return gw_journal_appendv(j, &one, 1, sync_ns, err);
}

int gw_journal_appendv(struct gw_journal *j, const struct iovec *iov, int n, uint64_t *sync_ns,
                       struct gw_error *err)
{
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += iov[i].iov_len;
    int rc = gw_file_writev_all(j->fd, iov, n);
    const char *what = "write";
    if (rc == 0) {
        uint64_t t0 = gw_now_ns();
        what = "fdatasync";
        rc = gw_io.fdatasync(j->fd) == 0 ? 0 : -errno;
        if (sync_ns)
            *sync_ns = gw_now_ns() - t0;
    }
    if (rc == 0) {
        j->size += len;
        for (int i = 0; i < n; i++)
            EVP_DigestUpdate(j->hash, iov[i].iov_base, iov[i].iov_len);
        return 0;
    }
    /* No partial line may stay behind: cut back to the last whole, durable line. */
    int cut = gw_io.ftruncate(j->fd, (off_t)j->size) == 0 && gw_io.fdatasync(j->fd) == 0;
    gw_error_set(err, "", "journal: %s: %s failed: %s%s", j->path, what, strerror(-rc),
                 cut ? "" : " (and truncating back failed)");
    return rc;
}

/* SHA-256 of the active segment's bytes so far, without ending the running hash. */
static int active_sha256(struct gw_journal *j, char out[GW_SHA256_HEX + 1])
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    EVP_MD_CTX *copy = EVP_MD_CTX_new();
    int ok = copy && EVP_MD_CTX_copy_ex(copy, j->hash) && EVP_DigestFinal_ex(copy, d, &n);
    EVP_MD_CTX_free(copy);
    if (ok)
        gw_hex_encode(d, n, out);
    return ok ? 0 : -ENOMEM;
}

static int fail(struct gw_error *err, const char *path, const char *what, int rc)
{
    gw_error_set(err, "", "journal: %s: %s: %s", path, what, strerror(-rc));
    return rc;
}

/* Puts the new active segment in place as journal.jsonl, written as journal.jsonl.new. */
static int write_new_active(struct gw_journal *j, const struct gw_buf *lines, struct gw_error *err)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s/%s", j->dir, GW_JOURNAL_NEW_FILE);
    int rc = gw_durable_write(j->path, tmp, lines->data, lines->len, 0640);
    return rc == 0 ? 0 : fail(err, tmp, "cannot write the next segment", rc);
}

int gw_journal_create_active(struct gw_journal *j, struct gw_error *err)
{
    size_t n = j->segs.count;
    uint64_t first = gw_segments_next_first(&j->segs);
    if (n == 0 && j->segs.narchived > 0)
        return fail(err, j->path, "cannot recreate: the segment before it is archived", -EINVAL);
    struct gw_buf lines;
    gw_buf_init(&lines);
    if (n)
        gw_segment_header_line(&lines, first, j->segs.sealed[n - 1].sha256);
    size_t repeat = lines.len; /* the epoch record in force, checked (docs/journal.md §2.1) */
    gw_buf_append(&lines, j->epoch_line.data, j->epoch_line.len ? j->epoch_line.len - 1 : 0);
    gw_record_end(&lines, repeat);
    int rc = lines.failed || j->epoch_line.failed ? -ENOMEM : write_new_active(j, &lines, err);
    int fd = rc == 0 ? gw_io.open(j->path, O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0) : -1;
    if (rc == 0 && fd < 0)
        rc = fail(err, j->path, "cannot open", -errno);
    if (rc == 0) {
        pthread_rwlock_wrlock(&j->swap);
        int old = j->fd;
        j->fd = fd;
        j->size = lines.len;
        atomic_store(&j->segment, first);
        pthread_rwlock_unlock(&j->swap);
        if (old >= 0)
            close(old);
        j->create_active = 0;
        EVP_DigestInit_ex(j->hash, EVP_sha256(), NULL);
        EVP_DigestUpdate(j->hash, lines.data, lines.len);
    }
    if (rc == -ENOMEM)
        gw_error_set(err, "", "journal: out of memory");
    gw_buf_free(&lines);
    return rc;
}

static int add_sealed(struct gw_journal *j, const struct gw_segment *s)
{
    if (j->segs.count == j->segs.cap) {
        size_t cap = j->segs.cap ? 2 * j->segs.cap : 16;
        struct gw_segment *p = realloc(j->segs.sealed, cap * sizeof(*p));
        if (!p)
            return -ENOMEM;
        j->segs.sealed = p;
        j->segs.cap = cap;
    }
    j->segs.sealed[j->segs.count++] = *s;
    return 0;
}

int gw_journal_rotate(struct gw_journal *j, struct gw_error *err)
{
    struct gw_segment s = {.first_seq = j->segment,
                           .last_seq = j->last_seq,
                           .bytes = j->size,
                           .checked = j->active_checked};
    struct gw_buf seal;
    gw_buf_init(&seal);
    int rc = active_sha256(j, s.sha256);
    if (rc == 0)
        gw_segment_seal_line(&seal, s.last_seq, s.bytes, s.sha256, j->active_checked);
    if (rc == 0 && !seal.failed)
        rc = gw_journal_append(j, seal.data, seal.len, NULL, err);
    s.size = j->size;
    gw_buf_free(&seal);
    if (rc == 0)
        gw_crash_point("rotation-sealed");
    char to[4096], name[GW_SEGMENT_NAME_MAX];
    gw_segment_name(name, s.first_seq);
    snprintf(to, sizeof(to), "%s/%s", j->dir, name);
    if (rc == 0 && (gw_io.rename(j->path, to) != 0 || gw_io.fsync(j->dir_fd) != 0))
        rc = fail(err, j->path, "cannot rename the sealed segment", -errno);
    if (rc == 0)
        gw_crash_point("rotation-renamed");
    if (rc == 0)
        rc = add_sealed(j, &s);
    if (rc == 0)
        rc = gw_journal_create_active(j, err);
    if (rc == -ENOMEM)
        gw_error_set(err, "", "journal: out of memory");
    return rc;
}
