/* `shardgate journal archive` (docs/journal.md §8). Per segment: D/<name>.tmp written and
 * fsynced, renamed, D fsynced; the archive.jsonl line appended and fdatasynced; the segment
 * unlinked and the state dir fsynced. A crash at any point leaves a state the start accepts and
 * a re-run completes. */
#include "archive.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <zstd.h>

#include "checkpoint.h"
#include "crashpoint.h"
#include "fileio.h"
#include "journal.h"
#include "journal_ids.h"
#include "segment.h"
#include "io.h"

#define ARCHIVE_ZSTD_LEVEL 3

static int fail(struct gw_error *err, const char *path, const char *what, int rc)
{
    gw_error_set(err, "", "journal archive: %s: %s: %s", path, what, strerror(-rc));
    return rc;
}

/* Puts the (compressed) bytes in place as D/<as>, written as D/<as>.tmp (gw_durable_file). */
static int write_copy(const char *adir, const char *as, const void *data, size_t len, int plain,
                      struct gw_error *err)
{
    char tmp[4200], dest[4096];
    snprintf(dest, sizeof(dest), "%s/%s", adir, as);
    snprintf(tmp, sizeof(tmp), "%s.tmp", dest);
    void *z = NULL;
    size_t zlen = len;
    if (!plain) {
        z = malloc(ZSTD_compressBound(len));
        if (!z)
            return gw_error_set(err, "", "journal archive: out of memory"), -ENOMEM;
        zlen = ZSTD_compress(z, ZSTD_compressBound(len), data, len, ARCHIVE_ZSTD_LEVEL);
        if (ZSTD_isError(zlen)) {
            free(z);
            return fail(err, tmp, "zstd", -EIO);
        }
    }
    int rc = gw_durable_write(dest, tmp, plain ? data : z, zlen, 0640);
    free(z);
    return rc == 0 ? 0 : fail(err, dest, "cannot write the archived copy", rc);
}

/* Appends the segment's archive.jsonl line and fdatasyncs it. */
static int append_entry(const char *dir, uint64_t first, uint64_t last, size_t size,
                        const char *sha, const char *as, struct gw_error *err)
{
    char path[4096], line[512], name[GW_SEGMENT_NAME_MAX];
    gw_segment_name(name, first);
    snprintf(path, sizeof(path), "%s/%s", dir, GW_ARCHIVE_LIST_FILE);
    int n = snprintf(line, sizeof(line),
                     "{\"name\":\"%s\",\"first_seq\":%llu,\"last_seq\":%llu,\"bytes\":%zu,"
                     "\"sha256\":\"%s\",\"archived_as\":\"%s\"}\n",
                     name, (unsigned long long)first, (unsigned long long)last, size, sha, as);
    int fd = gw_io.open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0640);
    int rc = fd < 0 ? -errno : gw_file_write_all(fd, line, (size_t)n);
    if (rc == 0 && gw_io.fdatasync(fd) != 0)
        rc = -errno;
    if (fd >= 0)
        close(fd);
    return rc == 0 ? 0 : fail(err, path, "cannot append", rc);
}

static int unlink_segment(const char *dir, uint64_t first, struct gw_error *err)
{
    char path[4096], name[GW_SEGMENT_NAME_MAX];
    gw_segment_name(name, first);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int rc = gw_io.unlink(path) == 0 ? gw_sync_dir(dir) : -errno;
    return rc == 0 ? 0 : fail(err, path, "cannot unlink", rc);
}

/* The ids file of a segment from its bytes (docs/journal.md §8): written before the segment
 * leaves the state dir, so its ids never depend on the index alone. */
static int write_ids(const char *dir, const char *path, const void *data, size_t len,
                     uint64_t first_seq, uint64_t last_seq, struct gw_error *err)
{
    struct gw_buf ids;
    gw_buf_init(&ids);
    int rc = gw_archived_ids_build(data, len, path, last_seq, &ids, err);
    if (rc == 0)
        rc = gw_archived_ids_write(dir, first_seq, &ids, err);
    gw_buf_free(&ids);
    return rc;
}

/* One segment: its ids file, the copy, its line, the unlink; `listed` (an earlier run listed
 * it and stopped): its ids file and the unlink. */
static int archive_one(const char *dir, const char *adir, const struct gw_segment *seg, int plain,
                       int listed, struct gw_error *err)
{
    char path[4096], name[GW_SEGMENT_NAME_MAX], as[GW_SEGMENT_NAME_MAX + 4];
    char sha[GW_SHA256_HEX + 1];
    gw_segment_name(name, seg->first_seq);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    snprintf(as, sizeof(as), "%s%s", name, plain ? "" : ".zst");
    int fd = gw_io.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0)
        return fail(err, path, "cannot open", -errno);
    void *data = mmap(NULL, (size_t)seg->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (data == MAP_FAILED)
        return fail(err, path, "cannot map", -errno);
    gw_sha256_hex(data, (size_t)seg->size, sha);
    int rc = write_ids(dir, path, data, (size_t)seg->bytes, seg->first_seq, seg->last_seq, err);
    if (rc == 0 && !listed)
        rc = write_copy(adir, as, data, (size_t)seg->size, plain, err);
    munmap(data, (size_t)seg->size);
    if (rc == 0)
        gw_crash_point("archive-copied");
    if (rc == 0 && !listed)
        rc = append_entry(dir, seg->first_seq, seg->last_seq, (size_t)seg->size, sha, as, err);
    if (rc == 0)
        gw_crash_point("archive-listed");
    return rc == 0 ? unlink_segment(dir, seg->first_seq, err) : rc;
}

/* The bytes of an archived copy, D/<as>, decompressed when .zst (*out: free() it). Returns 0,
 * -EINVAL (not a zstd frame), -ENOMEM or -errno. */
static int read_copy(const char *path, int zst, char **out, size_t *len)
{
    char *raw = NULL;
    size_t n = 0;
    int rc = gw_file_read(path, zst ? &raw : out, zst ? &n : len);
    if (rc != 0 || !zst)
        return rc;
    unsigned long long want = ZSTD_getFrameContentSize(raw, n);
    rc = want == ZSTD_CONTENTSIZE_ERROR || want == ZSTD_CONTENTSIZE_UNKNOWN ? -EINVAL : 0;
    *out = rc == 0 ? malloc(want ? (size_t)want : 1) : NULL;
    if (rc == 0 && !*out)
        rc = -ENOMEM;
    size_t got = rc == 0 ? ZSTD_decompress(*out, (size_t)want, raw, n) : 0;
    if (rc == 0 && (ZSTD_isError(got) || got != want))
        rc = -EINVAL;
    free(raw);
    if (rc != 0) {
        free(*out);
        *out = NULL;
    }
    *len = got;
    return rc;
}

/* An archived segment without a good ids file (archived before ids files were kept, or the
 * file damaged): the file is written from its copy in D, checked against archive.jsonl's sha256
 * first (docs/operations.md §5.2). */
static int restore_ids(const char *dir, const char *adir, const struct gw_segment *a,
                       const char *as, struct gw_error *err)
{
    char path[4096], sha[GW_SHA256_HEX + 1];
    if (gw_archived_ids_ok(dir, a))
        return 0;
    snprintf(path, sizeof(path), "%s/%s", adir, as);
    char *data = NULL;
    size_t len = 0, n = strlen(as);
    int rc = read_copy(path, n > 4 && strcmp(as + n - 4, ".zst") == 0, &data, &len);
    if (rc != 0)
        fail(err, path, "cannot read the archived copy", rc);
    if (rc == 0)
        gw_sha256_hex(data, len, sha);
    if (rc == 0 && (len != a->size || strcmp(sha, a->sha256) != 0)) {
        gw_error_set(err, "", "journal archive: %s: not the archived segment archive.jsonl lists",
                     path);
        rc = -EINVAL;
    }
    /* the seal is the last line: the ids come from the lines before it */
    size_t body = len;
    while (rc == 0 && body > 1 && data[body - 2] != '\n')
        body--;
    if (rc == 0)
        rc = write_ids(dir, path, data, body - 1, a->first_seq, a->last_seq, err);
    free(data);
    return rc;
}

/* What the newest checkpoint that loads covers: the bound min(its last_seq, its index_seq) (0:
 * none), and where it lies (its segment and offset). */
struct coverage {
    uint64_t bound, segment, offset;
};

static struct coverage covered_through(struct gw_journal *j)
{
    uint64_t *seqs = NULL;
    struct coverage cov = {0, 0, 0};
    long n = gw_checkpoint_list(j->dir, &seqs);
    for (long i = 0; i < n && cov.bound == 0; i++) {
        struct gw_checkpoint c;
        struct gw_error why;
        if (gw_checkpoint_load(j->dir, seqs[i], j, &c, &why) != 0)
            continue;
        cov = (struct coverage){c.index_seq < c.last_seq ? c.index_seq : c.last_seq, c.segment,
                                c.offset};
        gw_checkpoint_free(&c);
    }
    free(seqs);
    return cov;
}

/* A sealed segment the checkpoint covers: its receipts are within the bound, and the checkpoint
 * does not lie inside it short of its seal. A start resumes from a checkpoint in an archived
 * segment only when it ends at that segment's end (docs/journal.md §8): one that stops before
 * an epoch record at the segment's tail would cover nothing once the segment is archived. */
static int covers(const struct coverage *cov, const struct gw_segment *seg)
{
    if (cov->bound == 0 || seg->last_seq > cov->bound)
        return 0;
    return cov->segment != seg->first_seq || gw_segment_seal_at(seg, cov->offset);
}

/* 1 when archive.jsonl already lists the segment (an earlier run stopped before the unlink). */
static int listed(const struct gw_segment *list, size_t n, uint64_t first_seq)
{
    for (size_t i = 0; i < n; i++)
        if (list[i].first_seq == first_seq)
            return 1;
    return 0;
}

/* An archive run's state dir: its journal taken (its lock held), archive.jsonl read, and the ids
 * file of every archived segment that lacks a good one written from its checked copy. */
struct archive_run {
    struct gw_journal j;
    struct gw_segment *list;
    char **as;
    size_t n;
};

static int open_run(struct archive_run *r, const char *dir, const char *adir, struct gw_error *err)
{
    memset(r, 0, sizeof(*r));
    int rc = gw_journal_prepare(&r->j, dir, GW_SEGMENT_BYTES_DEFAULT, GW_JOURNAL_VERIFY, err);
    if (rc != 0)
        return rc;
    rc = gw_archive_list_read(dir, &r->list, &r->n, &r->as, err);
    for (size_t i = 0; rc == 0 && i < r->n; i++)
        if (gw_segments_archived(&r->j.segs, r->list[i].first_seq))
            rc = restore_ids(dir, adir, &r->list[i], r->as[i], err);
    return rc;
}

static void close_run(struct archive_run *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->as[i]);
    free(r->as);
    free(r->list);
    if (r->j.path)
        gw_journal_close(&r->j);
}

int gw_journal_archive_ids(const char *dir, const char *adir, struct gw_error *err)
{
    struct archive_run r;
    int rc = open_run(&r, dir, adir, err);
    close_run(&r);
    return rc;
}

int gw_journal_archive(const char *dir, const char *adir, int plain, struct gw_archive_result *out,
                       struct gw_error *err)
{
    struct archive_run r;
    memset(out, 0, sizeof(*out));
    int rc = open_run(&r, dir, adir, err);
    struct coverage cov = {0, 0, 0};
    if (rc == 0)
        cov = covered_through(&r.j);
    out->through_seq = cov.bound;
    for (size_t i = 0; rc == 0 && i < r.j.segs.count; i++) {
        const struct gw_segment *seg = &r.j.segs.sealed[i];
        if (!covers(&cov, seg))
            break;
        int again = listed(r.list, r.n, seg->first_seq);
        rc = archive_one(dir, adir, seg, plain, again, err);
        if (rc == 0)
            again ? out->completed++ : out->archived++;
    }
    close_run(&r);
    return rc;
}
