/* The batch reader's budgets (docs/api.md, "Limits"): a document is refused at the first value
 * no valid batch could hold, with the JSON path of that value, and the reader never builds
 * more than the schema allows. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "check.h"
#include "json_read.h"

/* Parses `json` as a batch of at most `max_changes` changes; returns the code, err filled. */
static int parse(const char *json, size_t max_changes, struct gw_error *err)
{
    struct gw_batch b;
    memset(err, 0, sizeof(*err));
    int rc = gw_batch_parse(json, strlen(json), max_changes, &b, err);
    if (rc == 0)
        gw_batch_free(&b);
    return rc;
}

static void test_array_elements_budget(void)
{
    struct gw_error err;
    const char *three =
        "{\"batch_id\":\"b\",\"changes\":[{\"id\":\"a\",\"key\":\"k\",\"size\":1},"
        "{\"id\":\"b\",\"key\":\"k\",\"size\":1},{\"id\":\"c\",\"key\":\"k\",\"size\":1}]}";
    CHECK_EQ_U64(parse(three, 3, &err), 0);
    CHECK_EQ_U64(parse(three, 2, &err), (uint64_t)-EINVAL);
    CHECK_EQ_STR(err.path, "changes");
    CHECK_EQ_STR(err.msg, "changes: more than 2 array elements in the document: a batch holds at "
                          "most 2 changes of 3 fields");
    /* Every array counts, wherever it is: a top-level array, or numbers inside a change. */
    CHECK_EQ_U64(parse("[0,0,0]", 2, &err), (uint64_t)-EINVAL);
    CHECK_EQ_STR(err.path, "$");
    CHECK_EQ_U64(parse("{\"changes\":[{\"id\":[0,0]}]}", 2, &err), (uint64_t)-EINVAL);
    CHECK_EQ_STR(err.path, "changes[0].id");
    CHECK_EQ_U64(parse("[[1,2],[3]]", 4, &err), (uint64_t)-EINVAL);
    CHECK_EQ_STR(err.path, "$[1]");
}

static void test_values_budget(void)
{
    struct gw_error err;
    /* One change: 3 + 4 values; an eighth (a fourth field) is past the budget. */
    const char *four = "{\"batch_id\":\"b\",\"changes\":[{\"id\":\"a\",\"key\":\"k\",\"size\":1,"
                       "\"x\":1}]}";
    CHECK_EQ_U64(parse(four, 1, &err), (uint64_t)-EINVAL);
    CHECK_EQ_STR(err.path, "changes[0].x");
    CHECK_EQ_STR(err.msg, "changes[0].x: more than 7 values in the document: a batch holds at "
                          "most 1 changes of 3 fields");
    /* The same document with room for it is an ordinary schema error. */
    CHECK_EQ_U64(parse(four, 2, &err), (uint64_t)-EINVAL);
    CHECK_EQ_STR(err.msg, "changes[0].x: unknown field");
    /* Empty member names and deeper paths are named in bracket notation. */
    CHECK_EQ_U64(parse("{\"\":{\"a\":{\"\":[{},{},{},{},{},{},{},{}]}}}", 1, &err),
                 (uint64_t)-EINVAL);
    CHECK_EQ_STR(err.path, "$[\"\"].a[\"\"]");
}

/* Nothing is built past the budget: the reader stops with the nodes it had. */
static void test_reader_stops_early(void)
{
    size_t n = 1 << 20;
    char *doc = malloc(2 * n + 2);
    for (size_t i = 0; i < n; i++)
        memcpy(doc + 2 * i, i ? ",0" : "[0", 2);
    memcpy(doc + 2 * n, "]", 2);
    struct json_limits limits = {.max_values = 1000, .max_elements = 0};
    struct jdoc d;
    CHECK_EQ_U64(json_read(doc, 2 * n + 1, &limits, &d), (uint64_t)-E2BIG);
    CHECK_EQ_U64(d.count, 1000);
    CHECK_EQ_U64(d.error_at, 2 * 999 + 1);
    CHECK_EQ_STR(d.path, "$[999]");
    CHECK_EQ_STR(d.what, "more than 1000 values in the document");
    json_doc_free(&d);
    CHECK_EQ_U64(json_read(doc, 2 * n + 1, NULL, &d), 0);
    CHECK_EQ_U64(d.count, n + 1);
    json_doc_free(&d);
    free(doc);
}

int main(void)
{
    test_array_elements_budget();
    test_values_budget();
    test_reader_stops_early();
    return CHECK_DONE();
}
