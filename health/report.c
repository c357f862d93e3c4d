/* Issue collection and the two JSON renderings: the `check` line and /healthz health+json. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

void hc_report_init(struct hc_report *rep)
{
    memset(rep, 0, sizeof *rep);
}

void hc_report_free(struct hc_report *rep)
{
    for (size_t i = 0; i < rep->n_issues; i++)
        free(rep->issues[i]);
    free(rep->issues);
    memset(rep, 0, sizeof *rep);
}

void hc_report_reset(struct hc_report *rep)
{
    hc_report_free(rep);
}

void hc_report_issue(struct hc_report *rep, int slot, const char *criterion, const char *subject,
                     const char *fmt, ...)
{
    rep->issues_total++;
    if (slot >= 0 && slot < HC_SLOTS_MAX)
        rep->fails[slot]++;
    if (rep->n_issues >= HC_ISSUES_KEPT)
        return;
    va_list ap;
    va_start(ap, fmt);
    int dlen = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    size_t head = strlen(criterion) + strlen(subject) + 4;
    char *s = dlen < 0 ? NULL : malloc(head + (size_t)dlen + 1);
    if (rep->n_issues == rep->cap_issues) {
        size_t cap = rep->cap_issues ? rep->cap_issues * 2 : 16;
        char **grown = realloc(rep->issues, cap * sizeof *grown);
        if (grown == NULL) {
            free(s);
            rep->oom = 1;
            return;
        }
        rep->issues = grown;
        rep->cap_issues = cap;
    }
    if (s == NULL) {
        rep->oom = 1;
        return;
    }
    int off = snprintf(s, head + 1, "%s: %s: ", criterion, subject);
    va_start(ap, fmt);
    vsnprintf(s + off, (size_t)dlen + 1, fmt, ap);
    va_end(ap);
    rep->issues[rep->n_issues++] = s;
}

int hc_report_pass(const struct hc_report *a, const struct hc_report *b)
{
    uint64_t checks = a->checks + (b ? b->checks : 0);
    uint64_t issues = a->issues_total + (b ? b->issues_total : 0);
    return checks > 0 && issues == 0 && !a->oom && !(b && b->oom);
}

/* A JSON string from text that may be cut by a NUL or hold invalid UTF-8 (it never should,
 * since it comes from decoded JSON, but output must stay valid JSON). */
static json_t *hc_json_text(const char *s)
{
    json_t *j = json_string(s);
    if (j != NULL)
        return j;
    size_t n = strlen(s);
    char *copy = malloc(n + 1);
    if (copy == NULL)
        return NULL;
    for (size_t i = 0; i <= n; i++)
        copy[i] = (s[i] & 0x80) ? '?' : s[i];
    j = json_string(copy);
    free(copy);
    return j;
}

/* Appends the issues of a and b to arr, with the summary lines for dropped issues and for
 * zero checks. */
static void hc_issues_into(json_t *arr, const struct hc_report *a, const struct hc_report *b)
{
    const struct hc_report *reps[2] = {a, b};
    uint64_t dropped = 0, checks = 0;
    for (int r = 0; r < 2; r++) {
        if (reps[r] == NULL)
            continue;
        for (size_t i = 0; i < reps[r]->n_issues; i++)
            json_array_append_new(arr, hc_json_text(reps[r]->issues[i]));
        dropped += reps[r]->issues_total - reps[r]->n_issues;
        checks += reps[r]->checks;
        if (reps[r]->oom)
            json_array_append_new(arr, json_string("report: health: out of memory storing "
                                                   "issues"));
    }
    if (dropped > 0) {
        char line[128];
        snprintf(line, sizeof line, "report: health: %llu more issues not listed",
                 (unsigned long long)dropped);
        json_array_append_new(arr, json_string(line));
    }
    if (checks == 0)
        json_array_append_new(arr, json_string("no checks ran"));
}

/* json_dumps' buffer comes from jansson's allocator (which may be the arena-aware one); callers
 * get a plain malloc'd copy they can free() or hand to libmicrohttpd. */
static char *hc_dumps(const json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT);
    if (s == NULL)
        return NULL;
    size_t n = strlen(s);
    char *copy = malloc(n + 1);
    if (copy != NULL)
        memcpy(copy, s, n + 1);
    json_free_t jfree;
    json_get_alloc_funcs(NULL, &jfree);
    jfree(s);
    return copy;
}

char *hc_report_check_json(const struct hc_report *a, const struct hc_report *b,
                           uint64_t pending_tail)
{
    json_t *o = json_object();
    json_t *issues = json_array();
    if (o == NULL || issues == NULL) {
        json_decref(o);
        json_decref(issues);
        return NULL;
    }
    hc_issues_into(issues, a, b);
    json_object_set_new(o, "status", json_string(hc_report_pass(a, b) ? "pass" : "fail"));
    json_object_set_new(o, "checks", json_integer((json_int_t)(a->checks + (b ? b->checks : 0))));
    json_object_set_new(o, "receipts",
                        json_integer((json_int_t)(a->receipts + (b ? b->receipts : 0))));
    if (pending_tail > 0) /* an unterminated last line, neither judged nor counted */
        json_object_set_new(o, "pending_tail_bytes", json_integer((json_int_t)pending_tail));
    json_object_set_new(o, "issues", issues);
    char *s = hc_dumps(o);
    json_decref(o);
    return s;
}

static json_t *hc_check_entry(uint64_t value, const char *unit, int pass, uint64_t fails)
{
    json_t *e = json_object();
    json_object_set_new(e, "observedValue", json_integer((json_int_t)value));
    json_object_set_new(e, "observedUnit", json_string(unit));
    json_object_set_new(e, "status", json_string(pass ? "pass" : "fail"));
    json_object_set_new(e, "issues", json_integer((json_int_t)fails));
    json_t *arr = json_array();
    json_array_append_new(arr, e);
    return arr;
}

char *hc_report_health_json(const struct hc_report *a, const struct hc_report *b,
                            const char *const *names, size_t n_slots, const char *extra_issue,
                            json_t *fields)
{
    json_t *o = json_object();
    json_t *checks = json_object();
    json_t *issues = json_array();
    if (o == NULL || checks == NULL || issues == NULL) {
        json_decref(o);
        json_decref(checks);
        json_decref(issues);
        return NULL;
    }
    int pass = hc_report_pass(a, b) && extra_issue == NULL;
    if (extra_issue != NULL)
        json_array_append_new(issues, hc_json_text(extra_issue));
    hc_issues_into(issues, a, b);
    for (size_t s = 0; s < n_slots && s < HC_SLOTS_MAX; s++) {
        if (names[s] == NULL)
            continue;
        uint64_t evals = a->evals[s] + (b ? b->evals[s] : 0);
        uint64_t fails = a->fails[s] + (b ? b->fails[s] : 0);
        json_object_set_new(checks, names[s],
                            hc_check_entry(evals, "evaluations", fails == 0, fails));
    }
    uint64_t checks_total = a->checks + (b ? b->checks : 0);
    json_object_set_new(checks, "checks_ran",
                        hc_check_entry(checks_total, "evaluations", checks_total > 0, 0));
    json_object_set_new(checks, "receipts_verified",
                        hc_check_entry(a->receipts + (b ? b->receipts : 0), "receipts", pass, 0));
    json_object_set_new(
        checks, "placements_verified",
        hc_check_entry(a->placements + (b ? b->placements : 0), "placements", pass, 0));
    json_object_set_new(o, "status", json_string(pass ? "pass" : "fail"));
    json_object_set_new(o, "checks", checks);
    json_object_set_new(o, "issues", issues);
    if (fields != NULL)
        json_object_update(o, fields);
    json_decref(fields);
    char *s = hc_dumps(o);
    json_decref(o);
    return s;
}
