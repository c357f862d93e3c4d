/* Fuzz target: gw_batch_parse on arbitrary bytes, with jansson as reference reader and the
 * strict reader as the canonical scan's; an accepted batch is dispatched on the worked example,
 * its receipt must be valid JSON, the health service must find nothing wrong with it, and its
 * journal record must replay byte for byte. */
#include <errno.h>

#include "batch.h"
#include "buf.h"
#include "dispatch.h"
#include "fuzz_health_epoch.h"
#include "fuzz_journal_check.h"
#include "receipt.h"
#include "topology.h"

static struct gw_topology *worked_example(void)
{
    static struct gw_topology t;
    static int ready;
    if (!ready) {
        struct gw_error err;
        char conf[4096], shards[4096];
        snprintf(conf, sizeof(conf), "%s", fuzz_source_path("conf/dispatch.env"));
        snprintf(shards, sizeof(shards), "%s", fuzz_source_path("input/shards.json"));
        if (gw_topology_load(conf, shards, &t, &err) != 0)
            fprintf(stderr, "fuzz: %s\n", err.msg);
        FUZZ_REQUIRE(ready == 0 && t.ring != NULL);
        ready = 1;
    }
    return &t;
}

/* The accepted batch obeys docs/contract.md §4. */
static void check_batch(const struct gw_batch *b)
{
    FUZZ_REQUIRE(gw_name_valid(b->batch_id, b->batch_id_len, GW_BATCH_ID_MAX));
    FUZZ_REQUIRE(b->count >= 1 && b->count <= GW_MAX_CHANGES_DEFAULT);
    uint64_t total = 0;
    for (size_t i = 0; i < b->count; i++) {
        const struct gw_change *c = &b->changes[i];
        FUZZ_REQUIRE(c->id_len >= 1 && c->id_len <= GW_CHANGE_ID_MAX);
        FUZZ_REQUIRE(c->key_len >= 1 && c->key_len <= GW_KEY_MAX);
        FUZZ_REQUIRE(c->size <= GW_SAFE_INT_MAX);
        total += c->size;
    }
    FUZZ_REQUIRE(total == b->total_size && total <= GW_SAFE_INT_MAX);
}

/* The receipt parses as JSON, names the batch, holds one placement per change, and the health
 * service (its own ring, its own readers) agrees with every fact in it. */
static void check_receipt(const struct gw_buf *out, const struct gw_batch *b,
                          const struct gw_dispatch *d)
{
    FUZZ_REQUIRE(!out->failed);
    json_error_t jerr;
    json_t *doc = json_loadb(out->data, out->len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!doc)
        fprintf(stderr, "receipt is not JSON: %s at column %d\n", jerr.text, jerr.column);
    FUZZ_REQUIRE(doc != NULL);
    json_t *bid = json_object_get(doc, "batch_id");
    FUZZ_REQUIRE(json_string_length(bid) == b->batch_id_len &&
                 memcmp(json_string_value(bid), b->batch_id, b->batch_id_len) == 0);
    FUZZ_REQUIRE(json_array_size(json_object_get(doc, "placements")) == b->count);
    FUZZ_REQUIRE(json_is_true(json_object_get(doc, "ok")) == (d->ok != 0));
    struct fuzz_health *h = fuzz_health_get();
    if (!fuzz_health_verify(h, doc)) {
        fuzz_health_dump(h);
        FUZZ_REQUIRE(!"the health service disagrees with a gateway receipt");
    }
    json_decref(doc);
}

/* What the gateway journals for this receipt (the epoch line, then the record as commit.c builds
 * it) must replay whole, without a torn line, giving back the receipt's exact bytes
 * (docs/journal.md §5). */
static void check_journal_round_trip(const struct gw_topology *t, const struct gw_batch *b,
                                     const struct gw_buf *receipt)
{
    struct gw_buf jl;
    gw_buf_init(&jl);
    struct gw_epoch_entry e = {.epoch_seq = 1, .first_seq = 1, .time = "2026-12-01T00:00:00.000Z"};
    memcpy(e.epoch, t->epoch, sizeof(e.epoch));
    memcpy(e.ring_id, ring_id(t->ring), sizeof(e.ring_id));
    gw_records_epoch_line(&jl, &t->contract, &t->members, &e);
    gw_buf_puts(&jl, "\n");
    gw_records_receipt_prefix(&jl, 1, b->fingerprint);
    size_t at = jl.len;
    gw_buf_append(&jl, receipt->data, receipt->len);
    gw_buf_puts(&jl, "}\n");
    FUZZ_REQUIRE(!jl.failed);
    struct fuzz_replay r;
    struct gw_journal_repair repair;
    struct gw_error err;
    int rc = fuzz_journal_replay((const uint8_t *)jl.data, jl.len, &r, &repair, &err);
    if (rc != 0 || repair.torn)
        fprintf(stderr, "journal replay of an acknowledged receipt: %s\n",
                rc ? err.msg : "cut away as a torn line");
    FUZZ_REQUIRE(rc == 0 && !repair.torn && r.records == 1);
    FUZZ_REQUIRE(r.last_offset == at && r.last_len == receipt->len);
    gw_buf_free(&jl);
}

/* jansson as the reference reader: the gateway accepts only JSON that jansson reads to the same
 * values, and never calls JSON that jansson reads "invalid JSON". */
static void check_against_jansson(const uint8_t *data, size_t size, int rc,
                                  const struct gw_batch *b, const struct gw_error *err)
{
    json_error_t jerr;
    json_t *ref =
        json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    /* By path "$" and the text: an unknown field may be named "$: invalid JSON...". */
    int said_invalid =
        strcmp(err->path, "$") == 0 && strncmp(err->msg, "$: invalid JSON ", 16) == 0;
    if (rc != 0) {
        /* jansson skips a raw NUL byte after a number ({"a": 1<NUL>}), which RFC 8259 does
         * not allow: a reader stricter there is right, so such inputs are not compared. */
        if (memchr(data, '\0', size))
            said_invalid = 0;
        /* The reader stops at 512 levels, jansson at 2048 (docs/decisions.md §3): a refusal
         * the spec asks for, not a disagreement about what JSON is. */
        if (strstr(err->msg, ": nesting deeper than "))
            said_invalid = 0;
        if (ref && said_invalid)
            fprintf(stderr, "gateway refuses JSON that jansson reads: %s\n", err->msg);
        FUZZ_REQUIRE(!ref || !said_invalid);
        json_decref(ref);
        return;
    }
    if (!ref)
        fprintf(stderr, "gateway accepts what jansson refuses: %s at %d:%d\n", jerr.text, jerr.line,
                jerr.column);
    FUZZ_REQUIRE(ref != NULL);
    json_t *id = json_object_get(ref, "batch_id");
    FUZZ_REQUIRE(json_object_size(ref) == 2 && json_string_length(id) == b->batch_id_len &&
                 memcmp(json_string_value(id), b->batch_id, b->batch_id_len) == 0);
    json_t *changes = json_object_get(ref, "changes");
    FUZZ_REQUIRE(json_array_size(changes) == b->count);
    for (size_t i = 0; i < b->count; i++) {
        json_t *c = json_array_get(changes, i);
        json_t *cid = json_object_get(c, "id"), *key = json_object_get(c, "key");
        const struct gw_change *g = &b->changes[i];
        FUZZ_REQUIRE(json_object_size(c) == 3);
        FUZZ_REQUIRE(json_string_length(cid) == g->id_len &&
                     memcmp(json_string_value(cid), g->id, g->id_len) == 0);
        FUZZ_REQUIRE(json_string_length(key) == g->key_len &&
                     memcmp(json_string_value(key), g->key, g->key_len) == 0);
        FUZZ_REQUIRE(json_is_integer(json_object_get(c, "size")) &&
                     (uint64_t)json_integer_value(json_object_get(c, "size")) == g->size);
    }
    json_decref(ref);
}

static int same_changes(const struct gw_batch *a, const struct gw_batch *b)
{
    for (size_t i = 0; i < a->count; i++) {
        const struct gw_change *x = &a->changes[i], *y = &b->changes[i];
        if (x->id_len != y->id_len || memcmp(x->id, y->id, x->id_len) != 0 ||
            x->key_len != y->key_len || memcmp(x->key, y->key, x->key_len) != 0 ||
            x->size != y->size)
            return 0;
    }
    return 1;
}

/* A body the canonical scan takes (docs/journal.md §3.1) reads as the strict reader reads the
 * same body after a space, which only the strict reader takes: the same code, the same batch
 * and fingerprint, or an error at the same path. */
static void check_against_strict(const uint8_t *data, size_t size, int rc, const struct gw_batch *b,
                                 const struct gw_error *err)
{
    struct gw_batch probe, s;
    memset(&probe, 0, sizeof(probe));
    int taken = gw_batch_read_canonical((const char *)data, size, GW_MAX_CHANGES_DEFAULT, &probe);
    if (taken != 1)
        return;
    gw_batch_free(&probe);
    char *spaced = malloc(size + 1);
    FUZZ_REQUIRE(spaced != NULL);
    spaced[0] = ' ';
    memcpy(spaced + 1, data, size);
    struct gw_error serr;
    memset(&serr, 0, sizeof(serr));
    int rc2 = gw_batch_parse(spaced, size + 1, GW_MAX_CHANGES_DEFAULT, &s, &serr);
    FUZZ_REQUIRE(rc2 == rc);
    if (rc == 0) {
        FUZZ_REQUIRE(s.batch_id_len == b->batch_id_len &&
                     memcmp(s.batch_id, b->batch_id, b->batch_id_len) == 0);
        FUZZ_REQUIRE(s.count == b->count && s.total_size == b->total_size && same_changes(&s, b));
        FUZZ_REQUIRE(memcmp(s.fingerprint, b->fingerprint, sizeof(s.fingerprint)) == 0);
        gw_batch_free(&s);
    } else {
        FUZZ_REQUIRE(strcmp(serr.path, err->path) == 0 && strcmp(serr.msg, err->msg) == 0);
    }
    free(spaced);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gw_topology *t = worked_example();
    struct gw_batch b;
    struct gw_error err;
    memset(&err, 0, sizeof(err));
    int rc = gw_batch_parse((const char *)data, size, GW_MAX_CHANGES_DEFAULT, &b, &err);
    check_against_jansson(data, size, rc, &b, &err);
    check_against_strict(data, size, rc, &b, &err);
    if (rc != 0) {
        /* A refusal names its JSON path and changes nothing (docs/contract.md §4). */
        FUZZ_REQUIRE(rc == -EINVAL || rc == -ENOMEM);
        FUZZ_REQUIRE(b.doc == NULL && b.changes == NULL && b.count == 0);
        FUZZ_REQUIRE(memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
        FUZZ_REQUIRE(memchr(err.path, '\0', sizeof(err.path)) != NULL);
        FUZZ_REQUIRE(rc != -EINVAL || (err.path[0] != '\0' && err.msg[0] != '\0'));
        return 0;
    }
    check_batch(&b);
    struct gw_dispatch d;
    rc = gw_dispatch_run(t, &b, &d, &err);
    FUZZ_REQUIRE(rc == 0);
    FUZZ_REQUIRE(d.dispatched == b.count);
    struct gw_buf out;
    gw_buf_init(&out);
    gw_receipt_write(&out, t, &b, &d);
    check_receipt(&out, &b, &d);
    check_journal_round_trip(t, &b, &out);
    gw_buf_free(&out);
    gw_dispatch_free(&d);
    gw_batch_free(&b);
    return 0;
}
