/* The epoch chain: each epoch record against its own contents and the record before it. */
/* A legacy record's chain fields are implicit (docs/journal.md §2): epoch = the recomputed id,
 * epoch_seq = its position, prev = the epoch before it; it has no first_seq. */
#include <inttypes.h>
#include <string.h>

#include "chain.h"

/* The record's epoch_seq, recorded or (legacy) implicit. */
static int64_t hc_chain_seq(const struct hc_epoch *e)
{
    return e->chain.legacy ? e->chain.position : e->chain.epoch_seq;
}

/* The epoch record before this one when it decoded; NULL for the first (and *broken = 1 when
 * the one before did not decode: the epoch_record issue already names it, nothing to compare). */
static const struct hc_epoch *hc_chain_before(const struct hc_run *run, int *broken)
{
    const struct hc_epoch *b = run->ep->chain.before;
    *broken = b != NULL && !b->usable;
    return *broken ? NULL : b;
}

void hc_c_epoch_id(struct hc_run *run)
{
    const struct hc_epoch *e = run->ep;
    hc_run_count(run, 1);
    if (strcmp(e->chain.epoch, e->epoch_id) != 0)
        hc_run_fail(run,
                    "epoch: expected %s (recomputed from the recorded contract and shards), "
                    "got %s",
                    e->epoch_id, e->chain.epoch);
}

void hc_c_epoch_seq(struct hc_run *run)
{
    int broken;
    const struct hc_epoch *b = hc_chain_before(run, &broken);
    hc_run_count(run, 1);
    int64_t want = b != NULL ? hc_chain_seq(b) + 1 : 1, got = hc_chain_seq(run->ep);
    if (!broken && got != want)
        hc_run_fail(run, "epoch_seq: expected %" PRId64 ", got %" PRId64, want, got);
}

void hc_c_epoch_prev(struct hc_run *run)
{
    int broken;
    const struct hc_epoch *b = hc_chain_before(run, &broken);
    const struct hc_epoch_chain *ch = &run->ep->chain;
    hc_run_count(run, 1);
    if (broken || ch->legacy)
        return;
    const char *want = b != NULL ? b->chain.epoch : "null";
    const char *got = ch->prev_null ? "null" : ch->prev;
    if (strcmp(want, got) != 0)
        hc_run_fail(run, "prev: expected %s (the epoch before it), got %s", want, got);
}

void hc_c_epoch_changed(struct hc_run *run)
{
    int broken;
    const struct hc_epoch *b = hc_chain_before(run, &broken);
    hc_run_count(run, 1);
    if (b != NULL && strcmp(b->chain.epoch, run->ep->chain.epoch) == 0)
        hc_run_fail(run,
                    "epoch: %s is the epoch of the record just before it (line %ld): a reload "
                    "to the same contract and membership writes no record",
                    run->ep->chain.epoch, b->line);
}

void hc_c_epoch_first_seq(struct hc_run *run)
{
    const struct hc_epoch_chain *ch = &run->ep->chain;
    if (ch->legacy)
        return;
    hc_run_count(run, 1);
    if (ch->first_seq != ch->last_seq + 1)
        hc_run_fail(run,
                    "first_seq: expected %" PRId64 " (1 + the last receipt seq before it), got "
                    "%" PRId64,
                    ch->last_seq + 1, ch->first_seq);
}
