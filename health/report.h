/* What a verification found: check counts per criterion and the issue strings. */
#ifndef HC_REPORT_H
#define HC_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Slots: one per criterion of the table plus the two decoding stages ("schema", "journal_line"),
 * which report issues but never count as checks. */
#define HC_SLOTS_MAX 48
/* Issue strings kept for output; the rest are counted and summarised in one last issue. */
#define HC_ISSUES_KEPT 1000

struct hc_report {
    uint64_t checks;     /* criterion evaluations that ran */
    uint64_t receipts;   /* receipts looked at */
    uint64_t placements; /* placements looked at */
    uint64_t evals[HC_SLOTS_MAX];
    uint64_t fails[HC_SLOTS_MAX];
    char **issues;
    size_t n_issues, cap_issues;
    uint64_t issues_total;
    int oom; /* an issue string could not be stored */
};

void hc_report_init(struct hc_report *rep);
void hc_report_free(struct hc_report *rep);
void hc_report_reset(struct hc_report *rep);

/* Records "<criterion>: <subject>: <detail>" against slot. */
void hc_report_issue(struct hc_report *rep, int slot, const char *criterion, const char *subject,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Fails when any issue was found or no check ran. */
int hc_report_pass(const struct hc_report *a, const struct hc_report *b);

/* The `check` output line, {"status","checks","receipts","issues"}, over a and b (b may be
 * NULL), with "pending_tail_bytes" before "issues" when pending_tail > 0. Returns a malloc'd string
 * or NULL on out-of-memory. */
char *hc_report_check_json(const struct hc_report *a, const struct hc_report *b,
                           uint64_t pending_tail);

/* The /healthz application/health+json body. names[slot] names each slot (NULL: unused).
 * extra_issue, if not NULL, is one more issue (e.g. the journal cannot be read). fields, if
 * not NULL, is an object whose members are added at the top level (its reference is taken). */
char *hc_report_health_json(const struct hc_report *a, const struct hc_report *b,
                            const char *const *names, size_t n_slots, const char *extra_issue,
                            json_t *fields);

#endif
