/* The gateway's input rules and byte form, judged on each receipt. */
/* See docs/operations.md, "The gateway's rules and the criteria that judge them". */
#include <inttypes.h>
#include <string.h>

#include "canon.h"
#include "membership.h"
#include "rules.h"

#define HC_BATCH_ID_MAX 128
#define HC_CHANGE_ID_MAX 128
#define HC_KEY_MAX 1024

static int hc_name_valid(struct hc_str s, size_t max)
{
    if (s.n < 1 || s.n > max)
        return 0;
    for (size_t i = 0; i < s.n; i++) {
        unsigned char c = (unsigned char)s.p[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-'))
            return 0;
    }
    return 1;
}

void hc_c_batch_id(struct hc_run *run)
{
    hc_run_count(run, 1);
    if (!hc_name_valid(run->r->batch_id, HC_BATCH_ID_MAX))
        hc_run_fail(run, "batch_id: must be 1..128 bytes of [A-Za-z0-9._:-], got %zu bytes",
                    run->r->batch_id.n);
}

void hc_c_changes(struct hc_run *run)
{
    const struct hc_receipt *r = run->r;
    hc_run_count(run, 1);
    if (r->n_pl < 1 || r->n_pl > run->v->max_changes)
        hc_run_fail(run, "placements: must hold 1..%zu changes, not %zu", run->v->max_changes,
                    r->n_pl);
    uint64_t total = 0;
    int over = 0;
    for (size_t i = 0; i < r->n_pl; i++) {
        const struct hc_rplacement *p = &r->pl[i];
        if (p->id.n < 1 || p->id.n > HC_CHANGE_ID_MAX)
            hc_run_fail(run, "placements[%zu].id: must be a string of 1..128 bytes, got %zu", i,
                        p->id.n);
        if (p->key.n < 1 || p->key.n > HC_KEY_MAX)
            hc_run_fail(run, "placements[%zu].key: must be a string of 1..1024 bytes, got %zu", i,
                        p->key.n);
        total += p->size >= 0 ? (uint64_t)p->size : 0; /* each <= 2^53-1 (schema) */
        if (!over && total > (uint64_t)HC_SAFE_INT_MAX) {
            over = 1;
            hc_run_fail(run, "placements[%zu].size: total size exceeds %lld", i, HC_SAFE_INT_MAX);
        }
    }
}

void hc_c_record_bytes(struct hc_run *run)
{
    if (run->rec->raw.p == NULL)
        return;
    hc_run_count(run, 1);
    long at = hc_canon_receipt_record(run->rec, run->r);
    if (at >= 0)
        hc_run_fail(run,
                    "not the bytes the gateway writes for this record (first difference at "
                    "byte %ld, column %ld)",
                    at, at + 1);
}
