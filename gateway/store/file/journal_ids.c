/* The fast path of a restart from a checkpoint (docs/journal.md §7): the batch ids of the
 * records the checkpoint covers go back into the idempotency index from each receipt record's
 * seq, fingerprint and batch_id alone, without a JSON tree. Only for seqs the index files do not
 * hold already (all of them with an index that keeps no files or lost them). */
#define _GNU_SOURCE /* memmem, madvise */
#include "journal_ids.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "line_check.h"
#include "io.h"

#define PREFIX "{\"type\":\"receipt\",\"seq\":"
#define FP_KEY ",\"fingerprint\":\""
#define RECEIPT_KEY "\",\"receipt\":"
#define ID_KEY "\"batch_id\":\""
#define ID_SEARCH 64 /* batch_id is the first or second key of a receipt */

struct scan {
    struct gw_idem *idem;
    uint64_t after_seq, segment;
    uint64_t next_seq; /* the seq the segment's next receipt must have */
    const char *path;
    int checked; /* the segment's lines carry checksums (docs/journal.md §2.1) */
};

/* Names the line at offset `at` of the file as the replay does: "<path>:<line number>". */
static int bad(struct gw_error *err, const struct scan *s, const char *line, uint64_t at,
               const char *what)
{
    size_t number = 1;
    for (const char *p = line - at; (p = memchr(p, '\n', (size_t)(line - p))) != NULL; p++)
        number++;
    gw_error_set(err, "", "journal: %s:%zu: %s", s->path, number, what);
    return -EINVAL;
}

/* What the ids of a receipt record are: its seq, fingerprint and batch_id. */
struct receipt_ids {
    uint64_t seq;
    unsigned char fp[GW_FINGERPRINT_LEN];
    const char *receipt; /* where the receipt bytes start */
    const char *id;      /* the batch_id's bytes, between its quotes */
    size_t id_len;
};

/* Reads the ids of one receipt line [p, end) from its fixed prefix; NULL or what is wrong. */
static const char *parse_ids(const char *p, const char *end, struct receipt_ids *out)
{
    const char *q = p + sizeof(PREFIX) - 1;
    out->seq = 0;
    while (q < end && *q >= '0' && *q <= '9')
        out->seq = out->seq * 10 + (uint64_t)(*q++ - '0');
    if ((size_t)(end - q) < sizeof(FP_KEY) - 1 + 64 + sizeof(RECEIPT_KEY) - 1 ||
        memcmp(q, FP_KEY, sizeof(FP_KEY) - 1) != 0)
        return "receipt record: no fingerprint";
    q += sizeof(FP_KEY) - 1;
    if (gw_hex_decode(q, out->fp, GW_FINGERPRINT_LEN) != 0)
        return "receipt record: fingerprint is not hex";
    q += 64;
    if (memcmp(q, RECEIPT_KEY, sizeof(RECEIPT_KEY) - 1) != 0)
        return "receipt record: no receipt";
    out->receipt = q + sizeof(RECEIPT_KEY) - 1;
    size_t window =
        (size_t)(end - out->receipt) < ID_SEARCH ? (size_t)(end - out->receipt) : ID_SEARCH;
    const char *id = memmem(out->receipt, window, ID_KEY, sizeof(ID_KEY) - 1);
    const char *id_end = id ? memchr(id + sizeof(ID_KEY) - 1, '"', (size_t)(end - id)) : NULL;
    if (!id_end)
        return "receipt record: no batch_id";
    out->id = id + sizeof(ID_KEY) - 1;
    out->id_len = (size_t)(id_end - out->id);
    return NULL;
}

/* One receipt line [p, end) at offset `at` (its bytes were replayed strictly once). A record
 * the index holds is passed on its seq alone, when that is the one due: a changed byte in a
 * receipt's prefix can hide it from neither check. */
static int take_line(struct scan *s, const char *p, const char *end, uint64_t at,
                     struct gw_error *err)
{
    struct receipt_ids r;
    const char *what = parse_ids(p, end, &r);
    uint64_t due = s->next_seq++;
    if (!what && r.seq == due && r.seq <= s->after_seq)
        return 0;
    size_t body = (size_t)(end - p) - 1; /* the record ends with the receipt and '}' */
    int rc = s->checked ? gw_record_check(p, (size_t)(end - p), &body) : 0;
    if (rc != 0)
        return bad(err, s, p, at, gw_record_fault(rc));
    if (what)
        return bad(err, s, p, at, what);
    if (r.seq != due)
        return bad(err, s, p, at, "receipt record: its seq is not the one after the previous");
    if (r.seq <= s->after_seq)
        return 0;
    struct gw_idem_ref ref = {.segment = s->segment,
                              .offset = at + (uint64_t)(r.receipt - p),
                              .len = (uint64_t)(p + body - r.receipt),
                              .seq = r.seq};
    rc = gw_idem_insert(s->idem, r.id, r.id_len, r.fp, ref);
    if (rc == -EEXIST)
        return bad(err, s, p, at, "receipt record: its batch_id was already journaled");
    if (rc != 0)
        gw_error_set(err, "", "%s", rc == -EIO ? GW_IDEM_BAD_BLOCK_MSG : "journal: out of memory");
    return rc;
}

/* A line of a checked segment that does not read as a receipt: an epoch record, a header or a
 * seal, or a receipt whose prefix was damaged, which its checksum then tells. */
static int check_other(const struct scan *s, const char *p, const char *end, uint64_t at,
                       struct gw_error *err)
{
    size_t body;
    int rc = gw_record_check(p, (size_t)(end - p), &body);
    return rc != 0 ? bad(err, s, p, at, gw_record_fault(rc)) : 0;
}

static int scan_bytes(struct scan *s, const char *data, uint64_t end, struct gw_error *err)
{
    uint64_t pos = 0;
    while (pos < end) {
        const char *nl = memchr(data + pos, '\n', (size_t)(end - pos));
        uint64_t next = nl ? (uint64_t)(nl - data) + 1 : end;
        const char *line = data + pos;
        int rc = 0;
        if (nl && (size_t)(nl - line) > sizeof(PREFIX) &&
            memcmp(line, PREFIX, sizeof(PREFIX) - 1) == 0)
            rc = take_line(s, line, nl, pos, err);
        else if (nl && s->checked) /* not a receipt, as its checksum confirms */
            rc = check_other(s, line, nl, pos, err);
        if (rc != 0)
            return rc;
        pos = next;
    }
    return 0;
}

/* One segment up to `end` bytes. */
static int scan_segment(struct scan *s, struct gw_journal *j, uint64_t first_seq, uint64_t end,
                        struct gw_error *err)
{
    char *path = gw_journal_segment_path(j, first_seq);
    int fd = path ? gw_io.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0) : -1;
    int rc = !path ? -ENOMEM : fd < 0 ? -errno : 0;
    s->segment = first_seq;
    s->next_seq = first_seq;
    s->path = path;
    s->checked = first_seq >= j->checked_from;
    void *data = NULL;
    if (rc == 0 && end > 0) {
        data = mmap(NULL, (size_t)end, PROT_READ, MAP_PRIVATE, fd, 0);
        rc = data == MAP_FAILED ? -errno : 0;
    }
    if (rc == 0 && end > 0) {
        madvise(data, (size_t)end, MADV_SEQUENTIAL);
        rc = scan_bytes(s, data, end, err);
        munmap(data, (size_t)end);
    } else if (rc != 0) {
        gw_error_set(err, "", "journal: %s: %s", path ? path : "?", strerror(-rc));
    }
    if (fd >= 0)
        close(fd);
    free(path);
    return rc;
}

void gw_archived_ids_name(char out[GW_ARCHIVED_IDS_NAME_MAX], uint64_t first_seq)
{
    snprintf(out, GW_ARCHIVED_IDS_NAME_MAX, "archived-%020llu.ids", (unsigned long long)first_seq);
}

int gw_archived_ids_build(const char *data, size_t len, const char *path, uint64_t last_seq,
                          struct gw_buf *out, struct gw_error *err)
{
    struct scan s = {.path = path};
    int checked = -1; /* the segment's first line decides (docs/journal.md §2.1) */
    gw_buf_reset(out);
    for (size_t pos = 0; pos < len;) {
        const char *nl = memchr(data + pos, '\n', len - pos);
        size_t next = nl ? (size_t)(nl - data) + 1 : len;
        const char *line = data + pos;
        struct receipt_ids r;
        const char *what = NULL;
        size_t body;
        int crc = nl ? gw_record_check(line, (size_t)(nl - line), &body) : -ENOMSG;
        if (checked < 0)
            checked = crc == 0;
        if (checked && crc != 0) /* only checked lines give ids */
            return bad(err, &s, line, pos, gw_record_fault(crc));
        if (nl && (size_t)(nl - line) > sizeof(PREFIX) &&
            memcmp(line, PREFIX, sizeof(PREFIX) - 1) == 0 && !(what = parse_ids(line, nl, &r))) {
            gw_buf_append(out, line, (size_t)(r.receipt - line));
            gw_buf_puts(out, "{\"batch_id\":\"");
            gw_buf_append(out, r.id, r.id_len);
            gw_buf_puts(out, "\"}}\n");
        }
        if (what)
            return bad(err, &s, line, pos, what);
        pos = next;
    }
    char sha[GW_SHA256_HEX + 1];
    gw_sha256_hex(out->data ? out->data : "", out->len, sha);
    gw_segment_seal_line(out, last_seq, out->len, sha, 0); /* a derived file: its own sha256 */
    if (out->failed)
        gw_error_set(err, "", "journal: out of memory");
    return out->failed ? -ENOMEM : 0;
}

int gw_archived_ids_write(const char *dir, uint64_t first_seq, const struct gw_buf *bytes,
                          struct gw_error *err)
{
    char name[GW_ARCHIVED_IDS_NAME_MAX], path[4096];
    gw_archived_ids_name(name, first_seq);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int rc = gw_file_replace(path, bytes->data ? bytes->data : "", bytes->len, 0640);
    if (rc != 0)
        gw_error_set(err, "", "journal: %s: cannot write: %s", path, strerror(-rc));
    return rc;
}

/* Why the ids file's bytes are not those of the archived segment `a`, or NULL: its last line
 * is a seal whose byte count is the rest, whose sha256 is theirs and whose last_seq is a's. */
static const char *ids_file_fault(const char *data, size_t len, const struct gw_segment *a,
                                  uint64_t *lines_len)
{
    size_t at = len >= 2 ? len - 1 : 0;
    while (at > 0 && data[at - 1] != '\n')
        at--;
    uint64_t last = 0, bytes = 0;
    char sha[GW_SHA256_HEX + 1], got[GW_SHA256_HEX + 1];
    if (len == 0 || data[len - 1] != '\n' ||
        gw_segment_parse_seal(data + at, len - 1 - at, &last, &bytes, sha) != 0 || bytes != at)
        return "truncated: it does not end with a seal line over its bytes";
    gw_sha256_hex(data, at, got);
    if (strcmp(got, sha) != 0)
        return "the seal's sha256 is not that of the bytes before it";
    if (last != a->last_seq)
        return "its seal's last_seq is not the archived segment's";
    *lines_len = at;
    return NULL;
}

/* Maps <dir>/archived-<F>.ids of archived segment `a` and checks it. Returns NULL (*data,
 * *size mapped: munmap them; *lines the bytes before its seal) or what is wrong. */
static const char *map_ids(const char *dir, const struct gw_segment *a, char *path, size_t n,
                           void **data, size_t *size, uint64_t *lines)
{
    char name[GW_ARCHIVED_IDS_NAME_MAX];
    gw_archived_ids_name(name, a->first_seq);
    snprintf(path, n, "%s/%s", dir, name);
    int fd = gw_io.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
    struct stat st;
    const char *what = fd < 0 ? "missing" : NULL;
    *data = MAP_FAILED;
    if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_size == 0))
        what = "empty or unreadable";
    if (!what &&
        (*data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED)
        what = "cannot be mapped";
    if (fd >= 0)
        close(fd);
    if (!what) {
        *size = (size_t)st.st_size;
        what = ids_file_fault(*data, *size, a, lines);
        if (what)
            munmap(*data, *size);
    }
    return what;
}

int gw_archived_ids_ok(const char *dir, const struct gw_segment *a)
{
    char path[4096];
    void *data;
    size_t size;
    uint64_t lines;
    if (map_ids(dir, a, path, sizeof(path), &data, &size, &lines))
        return 0;
    munmap(data, size);
    return 1;
}

/* The ids of archived segment `a` from its ids file (docs/journal.md §8). */
static int scan_archived(struct scan *s, struct gw_journal *j, const struct gw_segment *a,
                         struct gw_error *err)
{
    char seg[GW_SEGMENT_NAME_MAX], path[4096];
    void *data;
    size_t size = 0;
    uint64_t lines = 0;
    gw_segment_name(seg, a->first_seq);
    const char *what = map_ids(j->dir, a, path, sizeof(path), &data, &size, &lines);
    if (what) {
        gw_error_set(err, "",
                     "journal: %s: %s: the ids of the archived %s are in neither it nor the "
                     "idempotency index (docs/operations.md §5.2: `shardgate journal archive "
                     "--state-dir %s --dir <the archive dir>` writes it again)",
                     path, what, seg, j->dir);
        return -EINVAL;
    }
    s->segment = a->first_seq;
    s->next_seq = a->first_seq;
    s->path = path;
    s->checked = 0; /* the ids file is covered by its seal's sha256 */
    int rc = scan_bytes(s, data, lines, err);
    munmap(data, size);
    return rc;
}

int gw_journal_scan_ids(struct gw_journal *j, struct gw_idem *idem, uint64_t after_seq,
                        uint64_t end_segment, uint64_t end_offset, struct gw_error *err)
{
    struct scan s = {.idem = idem, .after_seq = after_seq};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < j->segs.narchived; i++)
        if (j->segs.archived[i].last_seq > after_seq)
            rc = scan_archived(&s, j, &j->segs.archived[i], err);
    for (size_t i = 0; rc == 0 && i < j->segs.count; i++) {
        const struct gw_segment *seg = &j->segs.sealed[i];
        if (seg->first_seq > end_segment)
            return 0;
        if (seg->last_seq <= after_seq && seg->first_seq != end_segment)
            continue;
        rc = scan_segment(&s, j, seg->first_seq,
                          seg->first_seq == end_segment ? end_offset : seg->bytes, err);
    }
    if (rc == 0 && j->segment == end_segment)
        rc = scan_segment(&s, j, end_segment, end_offset, err);
    return rc;
}
