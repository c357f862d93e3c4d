/* Checkpoint files: hashed when loaded, compared at their position in the journal. */
/* docs/operations.md §1.6. Their sha256 and head are checked when loaded,
 * their epochs/ledger/totals when the journal reader reaches their segment/offset, against what
 * health recomputed from the records up to there. */
#ifndef HC_CHECKPOINT_H
#define HC_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "digest.h"
#include "error.h"
#include "report.h"
#include "totals.h"

struct hc_epoch;

struct hc_ckpt {
    char name[48];
    char *text;      /* the file */
    size_t head_len; /* bytes before `,"sha256"` (what the sha256 covers) */
    uint64_t last_seq, segment, offset, index_seq;
    int usable;  /* sha256 and head check out: it is compared at its position */
    int reached; /* the reader passed its position */
};

/* Reads dir/name into c and checks its sha256, head keys, name and index_seq; a problem is an
 * issue "journal_checkpoint: <name>: <what>" into rep (slot) and leaves c unusable. Returns 0,
 * or -ENOMEM / -EIO with err filled. */
int hc_ckpt_load(const char *dir, const char *name, struct hc_digest *sha256, struct hc_ckpt *c,
                 struct hc_report *rep, int slot, struct hc_err *err);

/* The reader is at c's position after the receipt with seq last_seq; the chain is
 * epochs[0..n) and t the sums so far. When sums is 0 (an archived part was not read) only
 * last_seq is compared. The first difference is one issue `<path>: <file's> != <recomputed>`.
 * Returns 0 or -ENOMEM. */
int hc_ckpt_compare(struct hc_ckpt *c, int64_t last_seq, const struct hc_totals *t,
                    struct hc_epoch *const *epochs, size_t n, int sums, struct hc_report *rep,
                    int slot);

void hc_ckpt_free(struct hc_ckpt *c);

#endif
