/* The start checks over the sealed segments (docs/journal.md §6): cheap, the first and the last
 * line of each, no hashing; a missing, truncated, reordered or swapped segment is named. */
#include "segment.h"

#include "line_check.h"
#include "io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EDGE_BYTES 512 /* header and seal lines are far shorter */

static int fault(struct gw_error *err, const char *dir, uint64_t first_seq, const char *what)
{
    char name[GW_SEGMENT_NAME_MAX];
    gw_segment_name(name, first_seq);
    gw_error_set(err, "", "journal: %s/%s: %s", dir, name, what);
    return -EINVAL;
}

static int read_at(int fd, char *buf, size_t len, uint64_t at)
{
    ssize_t n = pread(fd, buf, len, (off_t)at);
    return n == (ssize_t)len ? 0 : -EIO;
}

/* 1 when a line ends with a crc32 member that is not its bytes' (docs/journal.md §2.1). */
static int damaged(const char *line, size_t len)
{
    size_t body;
    return gw_record_check(line, len, &body) == -EBADMSG;
}

/* Reads the header (unless the first segment) and the seal of one sealed segment. */
static int read_edges(int fd, const char *dir, struct gw_segment *s, struct gw_error *err)
{
    char buf[EDGE_BYTES];
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return fault(err, dir, s->first_seq, "not a regular file");
    s->size = (uint64_t)st.st_size;
    size_t n = s->size < EDGE_BYTES ? (size_t)s->size : EDGE_BYTES;
    if (n < 2 || read_at(fd, buf, n, s->size - n) != 0 || buf[n - 1] != '\n')
        return fault(err, dir, s->first_seq, "truncated: it does not end with a seal line");
    size_t start = n - 1;
    while (start > 0 && buf[start - 1] != '\n')
        start--;
    if (damaged(buf + start, n - 1 - start))
        return fault(err, dir, s->first_seq, "seal line: " GW_RECORD_MISMATCH);
    if (gw_segment_parse_seal(buf + start, n - 1 - start, &s->last_seq, &s->bytes, s->sha256) != 0)
        return fault(err, dir, s->first_seq, "truncated: it does not end with a seal line");
    if (s->bytes + (n - start) != s->size)
        return fault(err, dir, s->first_seq, "truncated: the seal's byte count is not the file's");
    if (s->last_seq + 1 < s->first_seq)
        return fault(err, dir, s->first_seq, "seal: last_seq is before the segment's first_seq");
    s->prev[0] = '\0';
    if (s->first_seq == 1)
        return 0;
    n = s->size < EDGE_BYTES ? (size_t)s->size : EDGE_BYTES;
    uint64_t first = 0;
    char *nl = read_at(fd, buf, n, 0) == 0 ? memchr(buf, '\n', n) : NULL;
    if (nl && damaged(buf, (size_t)(nl - buf)))
        return fault(err, dir, s->first_seq, "header line: " GW_RECORD_MISMATCH);
    if (!nl || gw_segment_parse_header(buf, (size_t)(nl - buf), &first, s->prev) != 0)
        return fault(err, dir, s->first_seq, "no segment header line");
    if (first != s->first_seq)
        return fault(err, dir, s->first_seq,
                     "its header's first_seq is not the one of its name (renamed or swapped)");
    return 0;
}

/* The offset of the first newline of fd at or after `at`, or -1. */
static int64_t first_newline(int fd, uint64_t size)
{
    char buf[4096];
    for (uint64_t at = 0; at < size;) {
        ssize_t got = pread(fd, buf, sizeof(buf), (off_t)at);
        if (got <= 0)
            return -1;
        const char *nl = memchr(buf, '\n', (size_t)got);
        if (nl)
            return (int64_t)(at + (uint64_t)(nl - buf));
        at += (uint64_t)got;
    }
    return -1;
}

int gw_segment_file_checked(int fd, uint64_t first_seq, uint64_t size)
{
    char tail[GW_RECORD_TAIL];
    int64_t nl = first_newline(fd, size);
    if (nl < 0)
        return 1;
    size_t n = (uint64_t)nl < GW_RECORD_TAIL ? (size_t)nl : GW_RECORD_TAIL;
    if (read_at(fd, tail, n, (uint64_t)nl - n) != 0)
        return 1;
    if (first_seq == 1)
        return gw_record_epoch_checked(tail, n);
    return n == GW_RECORD_TAIL && memcmp(tail, ",\"crc32\":\"", 10) == 0;
}

static int add_segment(struct gw_segments *out, uint64_t first_seq)
{
    if (out->count == out->cap) {
        size_t cap = out->cap ? 2 * out->cap : 16;
        struct gw_segment *s = realloc(out->sealed, cap * sizeof(*s));
        if (!s)
            return -ENOMEM;
        out->sealed = s;
        out->cap = cap;
    }
    out->sealed[out->count++] = (struct gw_segment){.first_seq = first_seq};
    return 0;
}

static int by_first_seq(const void *a, const void *b)
{
    const struct gw_segment *x = a, *y = b;
    return (x->first_seq > y->first_seq) - (x->first_seq < y->first_seq);
}

static int list_names(const char *dir, struct gw_segments *out, struct gw_error *err)
{
    DIR *d = opendir(dir);
    if (!d) {
        gw_error_set(err, "", "journal: state dir %s: %s", dir, strerror(errno));
        return -errno;
    }
    struct dirent *e;
    uint64_t first;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL)
        if (gw_segment_parse_name(e->d_name, &first) == 0)
            rc = add_segment(out, first);
    closedir(d);
    if (rc != 0)
        gw_error_set(err, "", "journal: out of memory");
    if (out->count > 1)
        qsort(out->sealed, out->count, sizeof(*out->sealed), by_first_seq);
    return rc;
}

/* Segment k continues segment k-1: first_seq and the prev link. */
static int check_link(const char *dir, const struct gw_segment *prev, const struct gw_segment *s,
                      struct gw_error *err)
{
    char what[200], name[GW_SEGMENT_NAME_MAX];
    gw_segment_name(name, prev->first_seq);
    if (s->first_seq != prev->last_seq + 1) {
        snprintf(what, sizeof(what),
                 "does not follow %s, which ends at seq %llu (a segment is missing)", name,
                 (unsigned long long)prev->last_seq);
        return fault(err, dir, s->first_seq, what);
    }
    if (strcmp(s->prev, prev->sha256) != 0) {
        snprintf(what, sizeof(what),
                 "its header's prev is not the sha256 of %s's seal (swapped or replaced)", name);
        return fault(err, dir, s->first_seq, what);
    }
    return 0;
}

/* The archived segments (archive.jsonl, docs/journal.md §8) whose file is gone from the state
 * dir: a run from seq 1, ending just before the first segment present. One listed but still
 * present (an archive stopped before its unlink) counts as present. */
static int add_archived(const char *dir, struct gw_segments *out, struct gw_error *err)
{
    struct gw_segment *list;
    char **as;
    size_t n;
    int rc = gw_archive_list_read(dir, &list, &n, &as, err);
    for (size_t i = 0; i < n; i++)
        free(as[i]);
    free(as);
    uint64_t present = out->count ? out->sealed[0].first_seq : UINT64_MAX;
    size_t kept = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (list[i].first_seq >= present)
            continue;
        uint64_t want = kept ? list[kept - 1].last_seq + 1 : 1;
        if (list[i].first_seq != want)
            rc = fault(err, dir, want, "missing: neither in the state dir nor in archive.jsonl");
        list[kept++] = list[i];
    }
    if (rc == 0 && kept && out->count && list[kept - 1].last_seq + 1 != present)
        rc = fault(err, dir, list[kept - 1].last_seq + 1,
                   "missing: neither in the state dir nor in archive.jsonl");
    out->archived = list;
    out->narchived = kept;
    return rc;
}

int gw_segments_scan(const char *dir, struct gw_segments *out, struct gw_error *err)
{
    memset(out, 0, sizeof(*out));
    int rc = list_names(dir, out, err);
    if (rc == 0)
        rc = add_archived(dir, out, err);
    uint64_t start = out->narchived ? out->archived[out->narchived - 1].last_seq + 1 : 1;
    for (size_t i = 0; rc == 0 && i < out->count; i++) {
        char path[4096], name[GW_SEGMENT_NAME_MAX];
        gw_segment_name(name, out->sealed[i].first_seq);
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        int fd = gw_io.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
        if (fd < 0)
            rc = fault(err, dir, out->sealed[i].first_seq, strerror(errno));
        else
            rc = read_edges(fd, dir, &out->sealed[i], err);
        if (rc == 0)
            out->sealed[i].checked =
                gw_segment_file_checked(fd, out->sealed[i].first_seq, out->sealed[i].bytes);
        if (fd >= 0)
            close(fd);
        if (rc == 0 && i == 0 && out->sealed[0].first_seq != start)
            rc = start == 1 ? fault(err, dir, 1, "missing (the first segment)")
                            : fault(err, dir, start,
                                    "missing: neither in the state dir nor in "
                                    "archive.jsonl");
        if (rc == 0 && i > 0)
            rc = check_link(dir, &out->sealed[i - 1], &out->sealed[i], err);
        if (rc == 0 && i > 0 && out->sealed[i - 1].checked && !out->sealed[i].checked)
            rc = fault(err, dir, out->sealed[i].first_seq,
                       "its lines carry no checksums, after a segment whose lines do");
    }
    if (rc != 0)
        gw_segments_free(out);
    return rc;
}

uint64_t gw_segments_next_first(const struct gw_segments *s)
{
    if (s->count)
        return s->sealed[s->count - 1].last_seq + 1;
    return s->narchived ? s->archived[s->narchived - 1].last_seq + 1 : 1;
}

const struct gw_segment *gw_segments_archived(const struct gw_segments *s, uint64_t first_seq)
{
    for (size_t i = 0; i < s->narchived; i++)
        if (s->archived[i].first_seq == first_seq)
            return &s->archived[i];
    return NULL;
}

void gw_segments_free(struct gw_segments *s)
{
    free(s->sealed);
    free(s->archived);
    memset(s, 0, sizeof(*s));
}
