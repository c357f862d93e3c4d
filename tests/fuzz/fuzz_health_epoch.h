/* The worked example as the health service sees it: its epoch and a verifier, set up once. */
#ifndef SHARDGATE_FUZZ_HEALTH_EPOCH_H
#define SHARDGATE_FUZZ_HEALTH_EPOCH_H

#include "../../health/verify.h"
#include "fuzz_common.h"

struct fuzz_health {
    struct hc_epoch epoch;
    struct hc_report report;
    struct hc_verifier verifier;
};

/* Loads conf/dispatch.env and input/shards.json with the health service's own readers and
 * builds a verifier running the whole criteria table. Aborts when it cannot. */
static inline struct fuzz_health *fuzz_health_get(void)
{
    static struct fuzz_health h;
    static int ready;
    if (ready)
        return &h;
    struct hc_contract c;
    struct hc_membership m;
    struct hc_err err;
    char conf[4096], shards[4096];
    snprintf(conf, sizeof(conf), "%s", fuzz_source_path("conf/dispatch.env"));
    snprintf(shards, sizeof(shards), "%s", fuzz_source_path("input/shards.json"));
    FUZZ_REQUIRE(hc_contract_load(conf, &c, &err) == 0);
    FUZZ_REQUIRE(hc_membership_load(shards, &c, &m, &err) == 0);
    FUZZ_REQUIRE(hc_epoch_make(&h.epoch, &c, &m, 0, &err) == 0);
    hc_report_init(&h.report);
    FUZZ_REQUIRE(hc_verifier_init(&h.verifier, &h.report, hc_criteria_count, &err) == 0);
    ready = 1;
    return &h;
}

/* Verifies one decoded receipt from a fresh report. Returns 1 on pass, 0 on fail; aborts on
 * an internal error and when the report cannot be rendered as JSON. */
static inline int fuzz_health_verify(struct fuzz_health *h, const json_t *doc)
{
    struct hc_err err;
    hc_report_reset(&h->report);
    int rc = hc_verify_receipt(&h->verifier, doc, &h->epoch, NULL, "fuzz", &err);
    if (rc != 0)
        fprintf(stderr, "hc_verify_receipt: %s\n", err.msg);
    FUZZ_REQUIRE(rc == 0);
    FUZZ_REQUIRE(h->report.receipts == 1);
    /* The check line must stay valid JSON whatever the receipt held. */
    char *line = hc_report_check_json(&h->report, NULL, 0);
    FUZZ_REQUIRE(line != NULL);
    json_error_t jerr;
    json_t *parsed = json_loads(line, 0, &jerr);
    if (!parsed)
        fprintf(stderr, "check line is not JSON (%s): %s\n", jerr.text, line);
    FUZZ_REQUIRE(parsed != NULL);
    json_decref(parsed);
    free(line);
    return hc_report_pass(&h->report, NULL);
}

/* Prints the report's issues (for a failing invariant). */
static inline void fuzz_health_dump(const struct fuzz_health *h)
{
    for (size_t i = 0; i < h->report.n_issues; i++)
        fprintf(stderr, "health issue: %s\n", h->report.issues[i]);
}

#endif
