/* Run files of the idempotency index: write, map, verify, search (docs/journal.md §9). */
#define OPENSSL_SUPPRESS_DEPRECATED /* SHA256_Init/Update/Final: no algorithm fetch per call       \
                                       (ring/hash.c) */
#include "idem_run.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "idem_bloom.h"

#define RUN_MAGIC "SGIDXRUN"
#define RUN_VERSION 2u /* 2: the Bloom filter after the records */

struct run_header {
    char magic[8];
    uint32_t version;
    uint32_t rec_size;
    uint64_t count;
    uint64_t bloom_blocks; /* gw_idem_bloom_blocks(count) */
    uint64_t reserved[4];
};
_Static_assert(sizeof(struct run_header) == sizeof(struct gw_idem_rec), "records stay aligned");

void gw_idem_run_name(char *name, size_t size, uint64_t id)
{
    snprintf(name, size, "run-%020" PRIu64 ".idx", id);
}

static int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) != 0 ? -errno : 0;
    close(fd);
    return rc;
}

int gw_idem_run_begin(struct gw_idem_run_writer *w, const char *dir, uint64_t id, uint64_t count)
{
    char name[64];
    gw_idem_run_name(name, sizeof(name), id);
    snprintf(w->path, sizeof(w->path), "%s/%s", dir, name);
    snprintf(w->tmp, sizeof(w->tmp), "%s.tmp", w->path);
    w->bloom_blocks = gw_idem_bloom_blocks(count);
    w->bloom = calloc(w->bloom_blocks ? w->bloom_blocks : 1, 64);
    w->fd = w->bloom ? open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    if (w->fd < 0) {
        int rc = w->bloom ? -errno : -ENOMEM;
        free(w->bloom);
        w->bloom = NULL;
        return rc;
    }
    SHA256_Init(&w->sha);
    w->expected = count;
    w->written = 0;
    w->used = 0;
    struct run_header h = {RUN_MAGIC, RUN_VERSION,     sizeof(struct gw_idem_rec),
                           count,     w->bloom_blocks, {0}};
    memcpy(w->buf, &h, sizeof(h)); /* the header is not part of the records' SHA-256 */
    w->used = sizeof(h);
    return 0;
}

static int flush_buf(struct gw_idem_run_writer *w)
{
    int rc = gw_file_write_all(w->fd, (const char *)w->buf, w->used);
    w->used = 0;
    return rc;
}

int gw_idem_run_put(struct gw_idem_run_writer *w, const struct gw_idem_rec *rec)
{
    assert(w->written < w->expected);
    assert(w->written == 0 || gw_idem_key_cmp(w->last, rec->key) < 0);
    w->last = rec->key;
    if (w->used + sizeof(*rec) > sizeof(w->buf)) {
        int rc = flush_buf(w);
        if (rc)
            return rc;
    }
    struct gw_idem_rec r = *rec;
    r.flags = GW_IDEM_REC_USED;
    memcpy(w->buf + w->used, &r, sizeof(r));
    SHA256_Update(&w->sha, &r, sizeof(r));
    w->used += sizeof(r);
    w->written++;
    gw_idem_bloom_add(w->bloom, w->bloom_blocks, r.key);
    return 0;
}

int gw_idem_run_finish(struct gw_idem_run_writer *w, const char *dir,
                       unsigned char sha256[SHA256_DIGEST_LENGTH])
{
    assert(w->written == w->expected);
    size_t bloom_size = w->bloom_blocks * 64;
    SHA256_Update(&w->sha, w->bloom, bloom_size);
    int rc = flush_buf(w);
    if (rc == 0)
        rc = gw_file_write_all(w->fd, (const char *)w->bloom, bloom_size);
    free(w->bloom);
    w->bloom = NULL;
    if (rc == 0 && fdatasync(w->fd) != 0)
        rc = -errno;
    if (close(w->fd) != 0 && rc == 0)
        rc = -errno;
    w->fd = -1;
    if (rc == 0 && rename(w->tmp, w->path) != 0)
        rc = -errno;
    if (rc == 0)
        rc = fsync_dir(dir);
    if (rc != 0) {
        unlink(w->tmp);
        return rc;
    }
    SHA256_Final(sha256, &w->sha);
    return 0;
}

void gw_idem_run_abandon(struct gw_idem_run_writer *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    free(w->bloom);
    w->bloom = NULL;
    unlink(w->tmp);
}

/* The SHA-256 of the records, read with pread rather than through the map: checking a run must
 * not make all of its pages resident in the process (docs/decisions.md §18, RAM). */
static int records_sha256(int fd, size_t size, unsigned char md[SHA256_DIGEST_LENGTH])
{
    static const size_t chunk = 1 << 20;
    unsigned char *buf = malloc(chunk);
    if (!buf)
        return -ENOMEM;
    SHA256_CTX c;
    SHA256_Init(&c);
    int rc = 0;
    for (size_t at = sizeof(struct run_header); at < size && rc == 0;) {
        ssize_t n = pread(fd, buf, size - at < chunk ? size - at : chunk, (off_t)at);
        if (n <= 0)
            rc = n < 0 && errno == EINTR ? 0 : -EIO;
        else {
            SHA256_Update(&c, buf, (size_t)n);
            at += (size_t)n;
        }
    }
    SHA256_Final(md, &c);
    free(buf);
    return rc;
}

static const char *check_run(int fd, const void *map, size_t size, uint64_t count,
                             const unsigned char *sha256, int verify)
{
    const struct run_header *h = map;
    if (size < sizeof(*h) || memcmp(h->magic, RUN_MAGIC, 8) != 0)
        return "not an index run";
    if (h->version != RUN_VERSION || h->rec_size != sizeof(struct gw_idem_rec))
        return "unknown run version";
    if (h->count != count || h->bloom_blocks != gw_idem_bloom_blocks(count) ||
        size != sizeof(*h) + count * sizeof(struct gw_idem_rec) + h->bloom_blocks * 64)
        return "run size differs from its record count";
    if (!verify)
        return NULL;
    unsigned char md[SHA256_DIGEST_LENGTH];
    int rc = records_sha256(fd, size, md);
    if (rc != 0)
        return rc == -ENOMEM ? "out of memory" : "cannot read the run";
    return memcmp(md, sha256, sizeof(md)) ? "run checksum mismatch" : NULL;
}

struct gw_idem_run *gw_idem_run_open(const char *dir, uint64_t id, uint64_t count,
                                     const unsigned char sha256[SHA256_DIGEST_LENGTH], int verify,
                                     const char **why)
{
    char name[64], path[4096];
    gw_idem_run_name(name, sizeof(name), id);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct gw_idem_run *r = calloc(1, sizeof(*r));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    *why = !r ? "out of memory" : fd < 0 || fstat(fd, &st) != 0 ? "cannot open the run" : NULL;
    if (!*why) {
        r->size = (size_t)st.st_size;
        r->map = r->size ? mmap(NULL, r->size, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
        *why = r->map == MAP_FAILED ? "cannot map the run"
                                    : check_run(fd, r->map, r->size, count, sha256, verify);
    }
    if (fd >= 0)
        close(fd);
    if (*why) {
        if (r && r->map && r->map != MAP_FAILED)
            munmap(r->map, r->size);
        free(r);
        return NULL;
    }
    posix_madvise(r->map, r->size, POSIX_MADV_RANDOM);
    r->id = id;
    r->count = count;
    r->recs = (const struct gw_idem_rec *)((const char *)r->map + sizeof(struct run_header));
    r->bloom = (const uint64_t *)(const void *)(r->recs + count);
    r->bloom_blocks = gw_idem_bloom_blocks(count);
    memcpy(r->sha256, sha256, SHA256_DIGEST_LENGTH);
    atomic_init(&r->refs, 1);
    return r;
}

void gw_idem_run_ref(struct gw_idem_run *r)
{
    atomic_fetch_add(&r->refs, 1);
}

void gw_idem_run_unref(struct gw_idem_run *r)
{
    if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    munmap(r->map, r->size);
    free(r);
}

/* [*lo, *hi) brackets `key`: keys are uniform hashes, so start where the key's value says. */
static void bracket(const struct gw_idem_run *r, struct gw_idem_key key, size_t *lo, size_t *hi)
{
    size_t n = (size_t)r->count;
    size_t guess = (size_t)(((unsigned __int128)key.hi * n) >> 64);
    for (size_t step = 64;; step *= 4) {
        *lo = guess > step ? guess - step : 0;
        *hi = n - guess > step ? guess + step : n;
        int lo_ok = *lo == 0 || gw_idem_key_cmp(r->recs[*lo].key, key) <= 0;
        int hi_ok = *hi == n || gw_idem_key_cmp(key, r->recs[*hi].key) < 0;
        if (lo_ok && hi_ok)
            return;
    }
}

const struct gw_idem_rec *gw_idem_run_find(const struct gw_idem_run *r, struct gw_idem_key key)
{
    if (r->count == 0 || !gw_idem_bloom_may_contain(r->bloom, r->bloom_blocks, key))
        return NULL;
    size_t lo, hi;
    bracket(r, key, &lo, &hi);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = gw_idem_key_cmp(r->recs[mid].key, key);
        if (c == 0)
            return &r->recs[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}
