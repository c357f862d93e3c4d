/* Fuzz target: gateway journal replay (gw_journal_open) on arbitrary bytes as journal.jsonl. */
#include "fuzz_journal_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_replay r;
    struct gw_journal_repair repair;
    struct gw_error err;
    fuzz_journal_replay(data, size, &r, &repair, &err);
    return 0;
}
