/* Writing a run file of the idempotency index (docs/journal.md §9); idem_run_read.c maps,
 * checks and searches it. */
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

#include "idem_run_file.h"

void gw_idem_run_name(char *name, size_t size, uint64_t id)
{
    snprintf(name, size, "run-%020" PRIu64 ".idx", id);
}

int gw_idem_run_begin(struct gw_idem_run_writer *w, const char *dir, uint64_t id, uint64_t count)
{
    char name[64], path[4096], tmp[4200];
    gw_idem_run_name(name, sizeof(name), id);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    w->bloom_blocks = gw_idem_bloom_blocks(count);
    w->blocks = gw_idem__run_blocks(gw_idem__run_payload(count));
    w->bloom = calloc(w->bloom_blocks ? w->bloom_blocks : 1, 64);
    w->digests = malloc(w->blocks ? w->blocks * SHA256_DIGEST_LENGTH : 1);
    w->file.fd = -1;
    int rc = w->bloom && w->digests ? gw_durable_open(&w->file, path, tmp, 0644) : -ENOMEM;
    if (rc != 0) {
        free(w->bloom);
        free(w->digests);
        w->bloom = NULL;
        w->digests = NULL;
        return rc;
    }
    SHA256_Init(&w->block_sha);
    w->block_fill = 0;
    w->block_at = 0;
    w->expected = count;
    w->written = 0;
    w->used = 0;
    struct run_header h = {RUN_MAGIC, RUN_VERSION,     sizeof(struct gw_idem_rec),
                           count,     w->bloom_blocks, {0}};
    memcpy(w->buf, &h, sizeof(h)); /* the header is in no block: open checks it field by field */
    w->used = sizeof(h);
    return 0;
}

/* Adds payload bytes to the block digests, closing each block as it fills. */
static void digest(struct gw_idem_run_writer *w, const void *data, size_t n)
{
    const unsigned char *p = data;
    while (n > 0) {
        size_t take = GW_IDEM_RUN_BLOCK - w->block_fill;
        take = take < n ? take : n;
        SHA256_Update(&w->block_sha, p, take);
        w->block_fill += take;
        p += take;
        n -= take;
        if (w->block_fill == GW_IDEM_RUN_BLOCK) {
            SHA256_Final(w->digests + w->block_at++ * SHA256_DIGEST_LENGTH, &w->block_sha);
            SHA256_Init(&w->block_sha);
            w->block_fill = 0;
        }
    }
}

static int flush_buf(struct gw_idem_run_writer *w)
{
    int rc = gw_file_write_all(w->file.fd, (const char *)w->buf, w->used);
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
    digest(w, &r, sizeof(r));
    w->used += sizeof(r);
    w->written++;
    gw_idem_bloom_add(w->bloom, w->bloom_blocks, r.key);
    return 0;
}

/* The filter, then the digest table (the last, short block closed first). */
static int write_tail(struct gw_idem_run_writer *w)
{
    size_t bloom_size = w->bloom_blocks * 64;
    digest(w, w->bloom, bloom_size);
    if (w->block_fill > 0)
        SHA256_Final(w->digests + w->block_at++ * SHA256_DIGEST_LENGTH, &w->block_sha);
    assert(w->block_at == w->blocks);
    int rc = flush_buf(w);
    if (rc == 0)
        rc = gw_file_write_all(w->file.fd, (const char *)w->bloom, bloom_size);
    if (rc == 0)
        rc = gw_file_write_all(w->file.fd, (const char *)w->digests,
                               w->blocks * SHA256_DIGEST_LENGTH);
    return rc;
}

int gw_idem_run_finish(struct gw_idem_run_writer *w, unsigned char sha256[SHA256_DIGEST_LENGTH])
{
    assert(w->written == w->expected);
    int rc = write_tail(w);
    if (rc == 0)
        SHA256(w->digests, w->blocks * SHA256_DIGEST_LENGTH, sha256);
    free(w->bloom);
    free(w->digests);
    w->bloom = NULL;
    w->digests = NULL;
    if (rc == 0)
        return gw_durable_commit(&w->file);
    gw_durable_abandon(&w->file);
    return rc;
}

void gw_idem_run_abandon(struct gw_idem_run_writer *w)
{
    gw_durable_abandon(&w->file);
    free(w->bloom);
    free(w->digests);
    w->bloom = NULL;
    w->digests = NULL;
}
