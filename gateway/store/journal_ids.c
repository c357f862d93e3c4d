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

#define PREFIX "{\"type\":\"receipt\",\"seq\":"
#define FP_KEY ",\"fingerprint\":\""
#define RECEIPT_KEY "\",\"receipt\":"
#define ID_KEY "\"batch_id\":\""
#define ID_SEARCH 64 /* batch_id is the first or second key of a receipt */

struct scan {
    struct gw_idem *idem;
    uint64_t after_seq, segment;
    const char *path;
};

static int bad(struct gw_error *err, const struct scan *s, uint64_t at, const char *what)
{
    gw_error_set(err, "", "journal: %s: offset %llu: %s", s->path, (unsigned long long)at, what);
    return -EINVAL;
}

/* One receipt line [p, end) at offset `at` (its bytes were replayed strictly once). */
static int take_line(struct scan *s, const char *p, const char *end, uint64_t at,
                     struct gw_error *err)
{
    const char *q = p + sizeof(PREFIX) - 1;
    uint64_t seq = 0;
    while (q < end && *q >= '0' && *q <= '9')
        seq = seq * 10 + (uint64_t)(*q++ - '0');
    if (seq <= s->after_seq)
        return 0;
    unsigned char fp[GW_FINGERPRINT_LEN];
    if ((size_t)(end - q) < sizeof(FP_KEY) - 1 + 64 + sizeof(RECEIPT_KEY) - 1 ||
        memcmp(q, FP_KEY, sizeof(FP_KEY) - 1) != 0)
        return bad(err, s, at, "receipt record: no fingerprint");
    q += sizeof(FP_KEY) - 1;
    if (gw_hex_decode(q, fp, GW_FINGERPRINT_LEN) != 0)
        return bad(err, s, at, "receipt record: fingerprint is not hex");
    q += 64;
    if (memcmp(q, RECEIPT_KEY, sizeof(RECEIPT_KEY) - 1) != 0)
        return bad(err, s, at, "receipt record: no receipt");
    const char *receipt = q + sizeof(RECEIPT_KEY) - 1;
    size_t window = (size_t)(end - receipt) < ID_SEARCH ? (size_t)(end - receipt) : ID_SEARCH;
    const char *id = memmem(receipt, window, ID_KEY, sizeof(ID_KEY) - 1);
    const char *id_end = id ? memchr(id + sizeof(ID_KEY) - 1, '"', (size_t)(end - id)) : NULL;
    if (!id_end)
        return bad(err, s, at, "receipt record: no batch_id");
    id += sizeof(ID_KEY) - 1;
    struct gw_idem_ref ref = {s->segment, at + (uint64_t)(receipt - p),
                              (uint64_t)(end - 1 - receipt), seq};
    int rc = gw_idem_insert(s->idem, id, (size_t)(id_end - id), fp, ref);
    if (rc == -EEXIST)
        return bad(err, s, at, "receipt record: its batch_id was already journaled");
    if (rc != 0)
        gw_error_set(err, "", "%s", rc == -EIO ? GW_IDEM_BAD_BLOCK_MSG : "journal: out of memory");
    return rc;
}

static int scan_bytes(struct scan *s, const char *data, uint64_t end, struct gw_error *err)
{
    uint64_t pos = 0;
    while (pos < end) {
        const char *nl = memchr(data + pos, '\n', (size_t)(end - pos));
        uint64_t next = nl ? (uint64_t)(nl - data) + 1 : end;
        const char *line = data + pos;
        if (nl && (size_t)(nl - line) > sizeof(PREFIX) &&
            memcmp(line, PREFIX, sizeof(PREFIX) - 1) == 0) {
            int rc = take_line(s, line, nl, pos, err);
            if (rc != 0)
                return rc;
        }
        pos = next;
    }
    return 0;
}

/* One segment up to `end` bytes. */
static int scan_segment(struct scan *s, struct gw_journal *j, uint64_t first_seq, uint64_t end,
                        struct gw_error *err)
{
    char *path = gw_journal_segment_path(j, first_seq);
    int fd = path ? open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
    int rc = !path ? -ENOMEM : fd < 0 ? -errno : 0;
    s->segment = first_seq;
    s->path = path;
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

/* The ids of an archived segment are only in the index (docs/journal.md §8): an index durable
 * below its last seq would forget them, so the start refuses, naming the segment. */
static int check_index_covers_archived(const struct gw_journal *j, uint64_t durable,
                                       struct gw_error *err)
{
    for (size_t i = 0; i < j->segs.narchived; i++) {
        if (j->segs.archived[i].last_seq <= durable)
            continue;
        char name[GW_SEGMENT_NAME_MAX];
        gw_segment_name(name, j->segs.archived[i].first_seq);
        gw_error_set(
            err, "",
            "journal: %s/%s: archived (archive.jsonl) but the idempotency index is durable "
            "only through seq %llu",
            j->dir, name, (unsigned long long)durable);
        return -EINVAL;
    }
    return 0;
}

int gw_journal_scan_ids(struct gw_journal *j, struct gw_idem *idem, uint64_t after_seq,
                        uint64_t end_segment, uint64_t end_offset, struct gw_error *err)
{
    struct scan s = {.idem = idem, .after_seq = after_seq};
    int rc = check_index_covers_archived(j, after_seq, err);
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
