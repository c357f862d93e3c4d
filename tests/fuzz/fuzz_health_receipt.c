/* Fuzz target: the health service's receipt verifier on arbitrary bytes, judged against the
 * worked example; the golden receipt must pass. */
#include "fuzz_health_epoch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char *golden;
    static size_t golden_len;
    struct fuzz_health *h = fuzz_health_get();
    if (!golden)
        golden = fuzz_read_source("tests/golden/sample-0001.receipt.json", &golden_len);
    /* As `shardgate-health check --receipt` reads a file. */
    json_error_t jerr;
    json_t *doc =
        json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    int is_golden = size == golden_len && memcmp(data, golden, size) == 0;
    FUZZ_REQUIRE(doc != NULL || !is_golden);
    if (!doc)
        return 0;
    int pass = fuzz_health_verify(h, doc);
    if (is_golden && !pass)
        fuzz_health_dump(h);
    FUZZ_REQUIRE(pass || !is_golden);
    json_decref(doc);
    return 0;
}
