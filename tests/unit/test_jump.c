/* Jump consistent hash (docs/contract.md §10), the gateway's ring_jump and health's hc_jump:
 * the published values and tests/golden/jump.txt (the probe's, checked by it too), edge counts,
 * the two against each other on a million keys, and the movement when a bucket is added.
 * Runs as `test_jump SOURCE_DIR`. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../health/jump.h"
#include "check.h"
#include "ring.h"

/* Lamping and Veach's values: keys 0..19 among 100 buckets, and key 2 among 100,001. */
static void test_published(void)
{
    static const int32_t want[20] = {0,  55, 62, 8,  45, 59, 86, 97, 82, 59,
                                     73, 37, 17, 56, 86, 21, 90, 37, 38, 83};
    for (uint64_t k = 0; k < 20; k++) {
        CHECK_EQ_U64(ring_jump(k, 100), want[k]);
        CHECK_EQ_U64(hc_jump(k, 100), want[k]);
    }
    CHECK_EQ_U64(ring_jump(2, 100001), 80343);
    CHECK_EQ_U64(hc_jump(2, 100001), 80343);
}

/* Every line of tests/golden/jump.txt: key, buckets, the probe's bucket. */
static void test_golden_file(const char *source)
{
    char path[4096], line[256];
    snprintf(path, sizeof(path), "%s/tests/golden/jump.txt", source);
    FILE *f = fopen(path, "r");
    CHECK_REPORT(f != NULL, "cannot open %s", path);
    if (!f)
        return;
    int rows = 0;
    while (fgets(line, sizeof(line), f)) {
        uint64_t key;
        int32_t buckets, bucket;
        if (line[0] == '#')
            continue;
        CHECK_REPORT(sscanf(line, "%" SCNu64 " %" SCNd32 " %" SCNd32, &key, &buckets, &bucket) == 3,
                     "%s: not a row: %s", path, line);
        CHECK_EQ_U64(ring_jump(key, buckets), bucket);
        CHECK_EQ_U64(hc_jump(key, buckets), bucket);
        rows++;
    }
    fclose(f);
    CHECK_EQ_U64(rows, 261);
}

static void test_edges(void)
{
    CHECK_EQ_U64(ring_jump(12345, 0), (uint64_t)-1);
    CHECK_EQ_U64(hc_jump(12345, 0), (uint64_t)-1);
    CHECK_EQ_U64(ring_jump(UINT64_MAX, 1), 0);
    CHECK_EQ_U64(hc_jump(UINT64_MAX, 1), 0);
    int32_t most = ring_jump(UINT64_MAX, INT32_MAX);
    CHECK_TRUE(most >= 0 && most < INT32_MAX);
    CHECK_EQ_U64(hc_jump(UINT64_MAX, INT32_MAX), most);
}

/* A bucket added at the end: a key stays where it was or moves to the new bucket, never
 * elsewhere; and the two implementations agree on every key. */
static void test_agree_and_move(void)
{
    uint64_t x = 0x2545F4914F6CDD1DULL;
    int disagree = 0, strays = 0;
    long moved = 0;
    for (int i = 0; i < 1000000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int32_t n = 1 + (int32_t)(x % 1000);
        int32_t before = ring_jump(x, n), after = ring_jump(x, n + 1);
        disagree += hc_jump(x, n) != before;
        strays += after != before && after != n;
        moved += after == n;
    }
    CHECK_EQ_U64(disagree, 0);
    CHECK_EQ_U64(strays, 0);
    /* about 1/(n+1) of the keys move, n uniform in 1..1000: some 7,000 of a million */
    CHECK_REPORT(moved > 3000 && moved < 15000, "moved %ld of 1000000", moved);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_jump SOURCE_DIR\n");
        return 2;
    }
    test_published();
    test_golden_file(argv[1]);
    test_edges();
    test_agree_and_move();
    return CHECK_DONE();
}
