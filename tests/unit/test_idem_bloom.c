/* The Bloom filter of index runs (docs/journal.md §9): its false positive rate on 1M absent ids,
 * and no false negative in a run written, then reopened and verified. Merges and reopen through
 * the whole index are test_idempotency's test_merge and test_persist_reopen, whose lookups all
 * pass the filter. */
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

/* A run of 200,000 records: its exact size (header, records, filter), every record found after
 * reopening with the checksum verified, and absent ids rejected mostly by the filter. */
static void test_run_roundtrip(void)
{
    const uint64_t n = 200000;
    char dir[64];
    fixture_mkdtemp(dir);
    struct gw_idem_rec *recs = calloc(n, sizeof(*recs));
    for (uint64_t i = 0; i < n; i++) {
        recs[i].key = key_of(i);
        recs[i].seq = i + 1;
    }
    qsort(recs, n, sizeof(*recs), cmp_rec);
    struct gw_idem_run_writer *w = malloc(sizeof(*w));
    unsigned char sha[SHA256_DIGEST_LENGTH];
    CHECK_EQ_U64(gw_idem_run_begin(w, dir, 7, n), 0);
    for (uint64_t i = 0; i < n; i++)
        CHECK_EQ_U64(gw_idem_run_put(w, &recs[i]), 0);
    CHECK_EQ_U64(gw_idem_run_finish(w, dir, sha), 0);
    free(w);
    const char *why = NULL;
    struct gw_idem_run *r = gw_idem_run_open(dir, 7, n, sha, 1, &why);
    CHECK_EQ_U64(r != NULL, 1);
    CHECK_EQ_U64(r->bloom_blocks, 3907);
    CHECK_EQ_U64(r->size, 64 + n * 64 + 3907 * 64);
    uint64_t bad = 0, passed = 0;
    for (uint64_t i = 0; i < n; i++) {
        const struct gw_idem_rec *got = gw_idem_run_find(r, key_of(i));
        bad += !got || got->seq != i + 1;
    }
    for (uint64_t i = n; i < 2 * n; i++) {
        bad += gw_idem_run_find(r, key_of(i)) != NULL;
        passed += gw_idem_bloom_may_contain(r->bloom, r->bloom_blocks, key_of(i));
    }
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(passed < n / 50, 1); /* the filter answers > 98% of absent ids */
    gw_idem_run_unref(r);
    char path[256], name[64];
    gw_idem_run_name(name, sizeof(name), 7);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    unlink(path);
    rmdir(dir);
    free(recs);
}

int main(void)
{
    test_false_positive_rate();
    test_run_roundtrip();
    return CHECK_DONE();
}
