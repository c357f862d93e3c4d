/* Receipt verification: the epoch a receipt is judged against, re-derived facts, the run. */
#ifndef HC_VERIFY_H
#define HC_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "contract.h"
#include "digest.h"
#include "membership.h"
#include "receipt.h"
#include "report.h"
#include "ring.h"
#include "spill.h"

/* What an epoch record says about its place in the chain (docs/journal.md §2). A legacy record
 * gets the implicit values: epoch = the recomputed id, epoch_seq = its position, prev = the
 * epoch before it, source "start", no time, no first_seq. */
struct hc_epoch_chain {
    int legacy;        /* the record has the legacy form (type, ring_id, contract, shards) */
    char epoch[41];    /* as recorded */
    int64_t epoch_seq; /* as recorded */
    int prev_null;     /* "prev":null */
    char prev[41];     /* as recorded, when not null */
    char source[8];    /* start, sighup, admin */
    char time[25];     /* YYYY-MM-DDTHH:MM:SS.mmmZ; "" for legacy */
    int64_t first_seq; /* as recorded; 0 for legacy */
    /* where the record sits in the journal (set by journal.c) */
    const struct hc_epoch *before; /* the previous epoch record, NULL for the first */
    int64_t position;              /* 1 for the journal's first epoch record */
    int64_t last_seq;              /* seq of the last receipt record before it, 0 for none */
};

/* A contract + membership, with its ring built once on first use. */
struct hc_epoch {
    struct hc_contract contract;
    struct hc_membership members;
    char ring_id[41];            /* recomputed from contract + members */
    char epoch_id[41];           /* recomputed from contract + members (docs/contract.md §7) */
    char recorded_id[41];        /* the epoch record's ring_id; "" for the service's own view */
    struct hc_epoch_chain chain; /* the record's chain fields; zero for the service's own view */
    long line;  /* journal line of the epoch record; 0 for the service's own view */
    int usable; /* the record decoded; contract and members are valid */
    int ring_built;
    struct hc_ring ring;
};

/* How a journal receipt names its epoch (set by journal.c): a version-2 receipt by its
 * "epoch", a version-1 receipt by its ring id (docs/contract.md §7). */
enum hc_epoch_match {
    HC_MATCH_KNOWN,    /* an epoch record before it has that epoch (v2) or ring id (v1) */
    HC_MATCH_NONE,     /* no epoch record before it has that epoch or ring id */
    HC_MATCH_NO_EPOCH, /* no epoch record precedes the receipt */
};

/* What the journal knows about one receipt record (NULL in --receipt mode). */
struct hc_record {
    long line;
    int64_t seq;
    int64_t prev_seq; /* 0 before the first receipt */
    struct hc_str fingerprint;
    enum hc_epoch_match match;
    const struct hc_epoch *named;    /* the epoch record it names (HC_MATCH_KNOWN) */
    const struct hc_epoch *in_force; /* the latest epoch record before it, NULL for none */
    long duplicate_of_line;          /* >0: the batch_id already appeared on that line */
    struct hc_str raw;               /* the line's bytes, without its newline */
};

/* What a journal knows at its end, for the end-of-journal criteria. */
struct hc_journal_end {
    const struct hc_epoch *latest; /* NULL: no epoch record */
    const struct hc_epoch *own;    /* the contract + shards the service read itself */
};

/* (hash of a change id, placement index), for finding duplicate ids by sorting. */
struct hc_idkey {
    uint64_t h;
    size_t i;
};

/* Facts re-derived from the epoch for one receipt. */
struct hc_derived {
    uint32_t *hash;     /* per placement */
    struct hc_hit *hit; /* per placement; valid when ring_empty == 0 */
    uint64_t *load;     /* per membership shard */
    uint64_t *received; /* per membership shard */
    int *over;          /* per membership shard */
    uint64_t over_count;
    long *home;            /* per placement: membership index of its home shard when it spilled
                              (docs/contract.md §9), else -1 */
    uint64_t spilled;      /* placements that spilled */
    struct hc_spill spill; /* scratch of the spill replay */
    int ring_empty;
    int ok;
    /* scratch for the sorted lookup */
    uint64_t *order;
    uint32_t *sorted;
    struct hc_hit *sorted_hit;
    struct hc_idkey *ids;
    size_t cap_pl, cap_sh;
};

struct hc_verifier {
    struct hc_report *report;
    size_t n_criteria;  /* how much of the criteria table runs (0: test hook, nothing) */
    size_t max_changes; /* the gateway's --max-changes this journal was written under */
    struct hc_digest *sha256;
    struct hc_derived d;
};

/* Scopes of the criteria table. */
/* BATCH: the batch rules the gateway enforces on input, judged on every decoded receipt. */
enum hc_scope { HC_SCOPE_BATCH, HC_SCOPE_RECEIPT, HC_SCOPE_RECORD, HC_SCOPE_EPOCH, HC_SCOPE_END };

/* The gateway's default --max-changes (docs/contract.md, section 4). */
#define HC_MAX_CHANGES_DEFAULT 100000

/* Everything a criterion can look at; fields not of its scope are NULL. */
struct hc_run {
    struct hc_verifier *v;
    struct hc_report *report;
    int slot;
    const char *name;
    const char *subject;
    const struct hc_receipt *r;
    const struct hc_epoch *ep;
    const struct hc_derived *d;
    const struct hc_record *rec;
    const struct hc_journal_end *end;
};

struct hc_criterion {
    const char *name;
    enum hc_scope scope;
    void (*fn)(struct hc_run *run);
};

/* The criteria table (criteria.c): named, non-empty. */
extern const struct hc_criterion hc_criteria[];
extern const size_t hc_criteria_count;
/* Slots of the decoding stages, after the table's. */
#define HC_SLOT_SCHEMA ((int)hc_criteria_count)
#define HC_SLOT_LINE ((int)hc_criteria_count + 1)
#define HC_SLOT_EPOCH_RECORD ((int)hc_criteria_count + 2)
/* The segments, checkpoints and archive of the state dir (docs/operations.md §1.6). */
#define HC_SLOT_SEGMENT ((int)hc_criteria_count + 3)
#define HC_SLOT_CHECKPOINT ((int)hc_criteria_count + 4)
#define HC_SLOT_ARCHIVE ((int)hc_criteria_count + 5)
/* The facts only a --store database has (docs/operations.md §1.7). */
#define HC_SLOT_STORE ((int)hc_criteria_count + 6)

/* Criterion helpers: count n evaluations; record an issue for the running criterion. */
void hc_run_count(struct hc_run *run, uint64_t n);
void hc_run_fail(struct hc_run *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prepares a verifier writing into report. Returns 0 or a negative code with err filled. */
int hc_verifier_init(struct hc_verifier *v, struct hc_report *report, size_t n_criteria,
                     struct hc_err *err);
void hc_verifier_free(struct hc_verifier *v);

/* Builds ep's ring unless built. Returns 0 or a negative code with err filled. */
int hc_epoch_ring(struct hc_epoch *ep, struct hc_err *err);
/* Makes a usable epoch from a contract and a membership (taken over): recomputes its ring id
 * and epoch id. Leaves recorded_id and chain as they are (ep starts zeroed). */
int hc_epoch_make(struct hc_epoch *ep, const struct hc_contract *c, struct hc_membership *m,
                  long line, struct hc_err *err);
void hc_epoch_free(struct hc_epoch *ep);

/* Verifies one receipt document: decodes it (a shape problem is a "schema" issue), then runs
 * the receipt criteria against ep (skipped when ep is NULL) and, when rec is not NULL, the
 * journal record criteria. fallback_subject names the receipt when it has no batch_id.
 * Returns 0, or a negative code (out of memory, digest failure) with err filled. */
int hc_verify_receipt(struct hc_verifier *v, const json_t *doc, struct hc_epoch *ep,
                      const struct hc_record *rec, const char *fallback_subject,
                      struct hc_err *err);

/* Runs the epoch-record criteria for ep. */
void hc_verify_epoch(struct hc_verifier *v, const struct hc_epoch *ep);

/* Runs the end-of-journal criteria into report. */
void hc_verify_end(struct hc_verifier *v, struct hc_report *report,
                   const struct hc_journal_end *end);

/* The canonical batch's SHA-256 (docs/journal.md §3) rebuilt from the receipt, as 64 hex digits. */
int hc_fingerprint(struct hc_digest *sha256, const struct hc_receipt *r, char hex[65]);

/* Names of all report slots (criteria then decoding stages), for /healthz. */
size_t hc_slot_names(const char **names, size_t max);

#endif
