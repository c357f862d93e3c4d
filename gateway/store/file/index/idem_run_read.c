/* Reading a run file of the idempotency index: map it, check its digest table at open and each
 * block the first time a lookup reads it, search it (docs/journal.md §9). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "idem_run.h"
#include "idem_run_file.h"
#include "io.h"
#include "log.h"

enum { BLOCK_UNCHECKED, BLOCK_GOOD, BLOCK_BAD };

static const char *check_header(const struct gw_idem_run *r, uint64_t count)
{
    const struct run_header *h = r->map;
    if (r->size < sizeof(*h) || memcmp(h->magic, RUN_MAGIC, 8) != 0)
        return "not an index run";
    if (h->version != RUN_VERSION || h->rec_size != sizeof(struct gw_idem_rec))
        return "unknown run version";
    size_t payload = gw_idem__run_payload(count);
    if (h->count != count || h->bloom_blocks != gw_idem_bloom_blocks(count) ||
        r->size != sizeof(*h) + payload + gw_idem__run_blocks(payload) * SHA256_DIGEST_LENGTH)
        return "run size differs from its record count";
    return NULL;
}

/* Reads the digest table with pread (not through the map: checking must not make the run's
 * pages resident, docs/decisions.md §15) and checks it against the manifest's `sha256`. */
static const char *load_digests(struct gw_idem_run *r, int fd, const unsigned char *sha256)
{
    size_t size = r->blocks * SHA256_DIGEST_LENGTH;
    r->digests = malloc(size ? size : 1);
    r->checked = calloc(r->blocks ? r->blocks : 1, sizeof(r->checked[0]));
    if (!r->digests || !r->checked)
        return "out of memory";
    off_t at = (off_t)(sizeof(struct run_header) + r->payload);
    for (size_t done = 0; done < size;) {
        ssize_t n = pread(fd, r->digests + done, size - done, at + (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return "cannot read the run";
        done += (size_t)n;
    }
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(r->digests, size, md);
    return memcmp(md, sha256, sizeof(md)) ? "run checksum mismatch" : NULL;
}

static void run_free(struct gw_idem_run *r)
{
    if (r->map && r->map != MAP_FAILED)
        munmap(r->map, r->size);
    free(r->digests);
    free(r->checked);
    free(r);
}

static const char *map_run(struct gw_idem_run *r, const char *path, uint64_t count,
                           const unsigned char *sha256)
{
    int fd = gw_io.open(path, O_RDONLY | O_CLOEXEC, 0);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return "cannot open the run";
    }
    r->size = (size_t)st.st_size;
    r->map = r->size ? mmap(NULL, r->size, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    const char *why = r->map == MAP_FAILED ? "cannot map the run" : check_header(r, count);
    if (!why) {
        r->payload = gw_idem__run_payload(count);
        r->blocks = gw_idem__run_blocks(r->payload);
        why = load_digests(r, fd, sha256);
    }
    close(fd);
    return why;
}

struct gw_idem_run *gw_idem_run_open(const char *dir, uint64_t id, uint64_t count,
                                     const unsigned char sha256[SHA256_DIGEST_LENGTH], int verify,
                                     const char **why)
{
    char name[64], path[4096];
    gw_idem_run_name(name, sizeof(name), id);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct gw_idem_run *r = calloc(1, sizeof(*r));
    *why = r ? map_run(r, path, count, sha256) : "out of memory";
    if (*why) {
        if (r)
            run_free(r);
        return NULL;
    }
    posix_madvise(r->map, r->size, POSIX_MADV_RANDOM);
    for (size_t b = 0; !verify && b < r->blocks; b++)
        atomic_init(&r->checked[b], BLOCK_GOOD);
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
    run_free(r);
}

static void log_corrupt(const struct gw_idem_run *r, size_t block)
{
    char name[64];
    gw_idem_run_name(name, sizeof(name), r->id);
    struct gw_buf f;
    gw_buf_init(&f);
    gw_log_str(&f, "run", name);
    gw_log_u64(&f, "block", block);
    gw_log_event("index_block_corrupt", &f);
}

/* 0 when the block holding payload byte `at` matches its digest (checked once, then
 * remembered), else -EIO. Two threads may check the same block at once: both store the same. */
static int block_ok(const struct gw_idem_run *r, size_t at)
{
    size_t b = at / GW_IDEM_RUN_BLOCK;
    unsigned char state = atomic_load_explicit(&r->checked[b], memory_order_acquire);
    if (state != BLOCK_UNCHECKED)
        return state == BLOCK_GOOD ? 0 : -EIO;
    size_t start = b * GW_IDEM_RUN_BLOCK;
    size_t len = r->payload - start < GW_IDEM_RUN_BLOCK ? r->payload - start : GW_IDEM_RUN_BLOCK;
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)r->map + sizeof(struct run_header) + start, len, md);
    int good = memcmp(md, r->digests + b * SHA256_DIGEST_LENGTH, sizeof(md)) == 0;
    unsigned char was = BLOCK_UNCHECKED;
    if (atomic_compare_exchange_strong(&r->checked[b], &was, good ? BLOCK_GOOD : BLOCK_BAD) &&
        !good)
        log_corrupt(r, b);
    return good ? 0 : -EIO;
}

int gw_idem_run_check_all(const struct gw_idem_run *r)
{
    for (size_t b = 0; b < r->blocks; b++)
        if (block_ok(r, b * GW_IDEM_RUN_BLOCK) != 0)
            return -EIO;
    return 0;
}

/* *c = the order of record i's key against `key`; 0 or -EIO (its block is bad). */
static int cmp_at(const struct gw_idem_run *r, size_t i, struct gw_idem_key key, int *c)
{
    int rc = block_ok(r, i * sizeof(struct gw_idem_rec));
    if (rc == 0)
        *c = gw_idem_key_cmp(r->recs[i].key, key);
    return rc;
}

/* [*lo, *hi) brackets `key`: keys are uniform hashes, so start where the key's value says. */
static int bracket(const struct gw_idem_run *r, struct gw_idem_key key, size_t *lo, size_t *hi)
{
    size_t n = (size_t)r->count;
    size_t guess = (size_t)(((unsigned __int128)key.hi * n) >> 64);
    for (size_t step = 64;; step *= 4) {
        *lo = guess > step ? guess - step : 0;
        *hi = n - guess > step ? guess + step : n;
        int c_lo = -1, c_hi = 1, rc = 0;
        if (*lo > 0)
            rc = cmp_at(r, *lo, key, &c_lo);
        if (rc == 0 && *hi < n)
            rc = cmp_at(r, *hi, key, &c_hi);
        if (rc != 0)
            return rc;
        if (c_lo <= 0 && c_hi > 0)
            return 0;
    }
}

static int bloom_says_maybe(const struct gw_idem_run *r, struct gw_idem_key key)
{
    size_t block = gw_idem_bloom_block_of(key, r->bloom_blocks);
    int rc = block_ok(r, (size_t)r->count * sizeof(struct gw_idem_rec) + block * 64);
    if (rc != 0)
        return rc;
    return gw_idem_bloom_may_contain(r->bloom, r->bloom_blocks, key);
}

int gw_idem_run_find(const struct gw_idem_run *r, struct gw_idem_key key,
                     const struct gw_idem_rec **rec)
{
    if (r->count == 0)
        return 0;
    int rc = bloom_says_maybe(r, key);
    size_t lo, hi;
    if (rc <= 0 || (rc = bracket(r, key, &lo, &hi)) != 0)
        return rc;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c;
        if ((rc = cmp_at(r, mid, key, &c)) != 0)
            return rc;
        if (c == 0) {
            *rec = &r->recs[mid];
            return 1;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}
