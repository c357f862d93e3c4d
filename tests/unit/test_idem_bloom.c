/* Index run files (docs/journal.md §9): the Bloom filter's false positive rate on 1M absent ids,
 * no false negative in a run written, then reopened and verified; the block digests: a changed
 * record byte is found by the first lookup that reads its block (and only its block), a changed
 * digest at open. Merges and reopen through the whole index are test_idempotency's test_merge and
 * test_persist_reopen, whose lookups all pass the filter. */
#include <errno.h>
#include <openssl/sha.h>
#include <sys/stat.h>

#include "check.h"
#include "idem_bloom.h"
#include "idem_fixture.h"
#include "idem_run.h"

static struct gw_idem_key key_of(uint64_t n)
{
    char id[32];
    fixture_id(id, sizeof(id), n);
    return gw_idem_key_of(id, strlen(id));
}

/* A blocked filter of 10 bits per key, k = 7, 512-bit blocks: with blocks loaded Poisson(51.2)
 * the expected rate is sum_j P(j) (1 - (1 - 1/512)^(7j))^7 = 0.957%; over 1M absent ids one
 * standard deviation is 0.01%, so [0.85%, 1.10%] fails only on a filter that is not this one. */
static void test_false_positive_rate(void)
{
    const uint64_t n = 1000000;
    size_t blocks = gw_idem_bloom_blocks(n);
    CHECK_EQ_U64(blocks, 19532);
    uint64_t *words = calloc(blocks, 64);
    for (uint64_t i = 0; i < n; i++)
        gw_idem_bloom_add(words, blocks, key_of(i));
    uint64_t missed = 0, fp = 0;
    for (uint64_t i = 0; i < n; i++)
        missed += !gw_idem_bloom_may_contain(words, blocks, key_of(i));
    for (uint64_t i = n; i < 2 * n; i++)
        fp += gw_idem_bloom_may_contain(words, blocks, key_of(i));
    printf("false positives: %llu of %llu absent ids\n", (unsigned long long)fp,
           (unsigned long long)n);
    CHECK_EQ_U64(missed, 0);
    CHECK_EQ_U64(fp >= 8500 && fp <= 11000, 1);
    CHECK_EQ_U64(gw_idem_bloom_may_contain(words, 0, key_of(1)), 0);
    free(words);
}

static int cmp_rec(const void *a, const void *b)
{
    return gw_idem_key_cmp(((const struct gw_idem_rec *)a)->key,
                           ((const struct gw_idem_rec *)b)->key);
}

static const uint64_t RUN_N = 200000;

/* Writes run 7 of ids 0..RUN_N-1 (seq = id + 1) into dir; *sha the manifest's checksum. */
static void write_run(const char *dir, unsigned char sha[SHA256_DIGEST_LENGTH])
{
    struct gw_idem_rec *recs = calloc(RUN_N, sizeof(*recs));
    for (uint64_t i = 0; i < RUN_N; i++) {
        recs[i].key = key_of(i);
        recs[i].seq = i + 1;
    }
    qsort(recs, RUN_N, sizeof(*recs), cmp_rec);
    struct gw_idem_run_writer *w = malloc(sizeof(*w));
    CHECK_EQ_U64(gw_idem_run_begin(w, dir, 7, RUN_N), 0);
    for (uint64_t i = 0; i < RUN_N; i++)
        CHECK_EQ_U64(gw_idem_run_put(w, &recs[i]), 0);
    CHECK_EQ_U64(gw_idem_run_finish(w, sha), 0);
    free(w);
    free(recs);
}

static void run_path(char *path, size_t size, const char *dir)
{
    char name[64];
    gw_idem_run_name(name, sizeof(name), 7);
    snprintf(path, size, "%s/%s", dir, name);
}

static void flip_byte(const char *dir, off_t at)
{
    char path[256];
    run_path(path, sizeof(path), dir);
    CHECK_EQ_U64(fixture_flip_byte(path, at), 0);
}

/* A fresh dir with run 7 written and opened with its blocks to be checked. */
static struct gw_idem_run *fresh_run(char *dir, unsigned char sha[SHA256_DIGEST_LENGTH])
{
    fixture_mkdtemp(dir);
    write_run(dir, sha);
    const char *why = NULL;
    struct gw_idem_run *r = gw_idem_run_open(dir, 7, RUN_N, sha, 1, &why);
    CHECK_EQ_U64(r != NULL, 1);
    return r;
}

static void remove_run(const char *dir)
{
    char path[256];
    run_path(path, sizeof(path), dir);
    unlink(path);
    rmdir(dir);
}

/* A run of 200,000 records: its exact size (header, records, filter, one digest per 16 KiB),
 * every record found after reopening with its blocks checked, and absent ids rejected mostly by
 * the filter. */
static void test_run_roundtrip(void)
{
    char dir[64];
    unsigned char sha[SHA256_DIGEST_LENGTH];
    struct gw_idem_run *r = fresh_run(dir, sha);
    CHECK_EQ_U64(r->bloom_blocks, 3907);
    CHECK_EQ_U64(r->payload, RUN_N * 64 + 3907 * 64);
    CHECK_EQ_U64(r->blocks, 797); /* 13,050,048 bytes / 16,384, rounded up */
    CHECK_EQ_U64(r->size, 64 + RUN_N * 64 + 3907 * 64 + 797 * 32);
    uint64_t bad = 0, passed = 0;
    for (uint64_t i = 0; i < RUN_N; i++) {
        const struct gw_idem_rec *got = NULL;
        bad += gw_idem_run_find(r, key_of(i), &got) != 1 || got->seq != i + 1;
    }
    for (uint64_t i = RUN_N; i < 2 * RUN_N; i++) {
        const struct gw_idem_rec *got = NULL;
        bad += gw_idem_run_find(r, key_of(i), &got) != 0;
        passed += gw_idem_bloom_may_contain(r->bloom, r->bloom_blocks, key_of(i));
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(passed < RUN_N / 50, 1); /* the filter answers > 98% of absent ids */
    CHECK_EQ_U64(gw_idem_run_check_all(r), 0);
    gw_idem_run_unref(r);
    remove_run(dir);
}

/* One record byte changed on disk: open still succeeds (it reads only the digest table); the
 * lookup of that record, and of no record far from it, answers -EIO; so does checking the whole
 * run (what a merge does first). A run opened as just written (verify 0) trusts its blocks. */
static void test_bad_record_block(void)
{
    char dir[64];
    unsigned char sha[SHA256_DIGEST_LENGTH];
    const char *why = NULL;
    struct gw_idem_run *r = fresh_run(dir, sha);
    struct gw_idem_key victim = r->recs[1000].key, far = r->recs[150000].key;
    gw_idem_run_unref(r);
    flip_byte(dir, 64 + 1000 * 64 + 40); /* record 1000's seq: payload block 3 */
    r = gw_idem_run_open(dir, 7, RUN_N, sha, 1, &why);
    CHECK_EQ_U64(r != NULL, 1);
    const struct gw_idem_rec *got = NULL;
    CHECK_EQ_U64(gw_idem_run_find(r, far, &got), 1);
    CHECK_EQ_U64(gw_idem_run_find(r, victim, &got), (uint64_t)-EIO);
    CHECK_EQ_U64(gw_idem_run_find(r, victim, &got), (uint64_t)-EIO); /* remembered as bad */
    CHECK_EQ_U64(gw_idem_run_check_all(r), (uint64_t)-EIO);
    gw_idem_run_unref(r);
    r = gw_idem_run_open(dir, 7, RUN_N, sha, 0, &why);
    CHECK_EQ_U64(gw_idem_run_find(r, victim, &got), 1);
    CHECK_EQ_U64(gw_idem_run_check_all(r), 0);
    gw_idem_run_unref(r);
    remove_run(dir);
}

/* A changed filter byte fails the lookups that read its block; a changed digest fails the open. */
static void test_bad_filter_and_digest(void)
{
    char dir[64];
    unsigned char sha[SHA256_DIGEST_LENGTH];
    const char *why = NULL;
    gw_idem_run_unref(fresh_run(dir, sha));
    flip_byte(dir, 64 + RUN_N * 64 + 5); /* the filter's first block */
    struct gw_idem_run *r = gw_idem_run_open(dir, 7, RUN_N, sha, 1, &why);
    CHECK_EQ_U64(r != NULL, 1);
    /* Payload block 781 (16 KiB from byte 12,795,904) holds filter blocks 0 .. 191. */
    uint64_t in_bad = 0, eio = 0, found_elsewhere = 0;
    for (uint64_t i = 0; i < 1000; i++) {
        const struct gw_idem_rec *got = NULL;
        int rc = gw_idem_run_find(r, key_of(i), &got);
        if (gw_idem_bloom_block_of(key_of(i), r->bloom_blocks) < 192) {
            in_bad++;
            eio += rc == -EIO;
        } else {
            found_elsewhere += rc == 1;
        }
    }
    CHECK_EQ_U64(in_bad > 20, 1);
    CHECK_EQ_U64(eio, in_bad);
    CHECK_EQ_U64(found_elsewhere > 900, 1);
    gw_idem_run_unref(r);
    flip_byte(dir, 64 + RUN_N * 64 + 5); /* mended */
    flip_byte(dir, 64 + 13050048 + 100); /* the digest table */
    CHECK_EQ_U64(gw_idem_run_open(dir, 7, RUN_N, sha, 1, &why) == NULL, 1);
    CHECK_EQ_STR(why, "run checksum mismatch");
    CHECK_EQ_U64(gw_idem_run_open(dir, 7, RUN_N - 1, sha, 1, &why) == NULL, 1);
    CHECK_EQ_STR(why, "run size differs from its record count");
    remove_run(dir);
}

int main(void)
{
    test_false_positive_rate();
    test_run_roundtrip();
    test_bad_record_block();
    test_bad_filter_and_digest();
    return CHECK_DONE();
}
