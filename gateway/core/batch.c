/* Batch parsing and validation: the whole batch is accepted or none of it is. */
#include "batch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "buf.h"
#include "fnv.h"
#include "json_read.h"
#include "membership.h"

#define SIZE_RULE "must be an integer 0..9007199254740991"

/* Open-addressing set of change ids, to find a duplicate in one pass. */
struct id_set {
    uint32_t *slots; /* change index + 1, 0 when empty */
    size_t mask;
};

static int id_set_init(struct id_set *set, size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    set->slots = calloc(cap, sizeof(*set->slots));
    set->mask = cap - 1;
    return set->slots ? 0 : -ENOMEM;
}

/* Inserts change i; returns the index of an earlier change with the same id, or -1. */
static long id_set_insert(struct id_set *set, const struct gw_change *changes, size_t i)
{
    const struct gw_change *c = &changes[i];
    for (size_t s = gw_fnv1a(c->id, c->id_len) & set->mask;; s = (s + 1) & set->mask) {
        if (set->slots[s] == 0) {
            set->slots[s] = (uint32_t)i + 1;
            return -1;
        }
        const struct gw_change *o = &changes[set->slots[s] - 1];
        if (o->id_len == c->id_len && memcmp(o->id, c->id, c->id_len) == 0)
            return (long)set->slots[s] - 1;
    }
}

/* ---- The schema of docs/contract.md §4 over the parsed document, checked in a fixed
 * order. ---- */

static int bad(struct gw_error *err, const char *path, const char *what)
{
    gw_error_set(err, path, "%s", what);
    return -EINVAL;
}

/* "changes[<i>].<field>", or "<field>" at the top (i < 0). An empty name would leave the
 * path empty; bracket notation still names it: changes[<i>][""], $[""]. */
static void field_path(char *out, size_t cap, long i, const char *field, size_t len)
{
    if (len == 0 && i < 0)
        snprintf(out, cap, "$[\"\"]");
    else if (len == 0)
        snprintf(out, cap, "changes[%ld][\"\"]", i);
    else if (i < 0)
        snprintf(out, cap, "%.*s", (int)len, field);
    else
        snprintf(out, cap, "changes[%ld].%.*s", i, (int)len, field);
}

/* A field an object of the schema holds, by its name. */
struct field {
    const char *name;
    uint32_t len;
};
#define FIELD(name)                                                                                \
    {                                                                                              \
        name, sizeof(name) - 1                                                                     \
    }

/* Takes each member of `obj` into found[k], k its field's place in `fields`, in one pass. Every
 * member must be one of the fields (the first unknown one in the document is named), every field
 * present (the first missing one in `fields` is named). The reader refused duplicate names. */
static int take_fields(const struct jdoc *d, const struct jnode *obj, const struct field *fields,
                       size_t n, long i, const struct jnode **found, struct gw_error *err)
{
    char path[200];
    for (size_t k = 0; k < n; k++)
        found[k] = NULL;
    for (uint32_t c = obj->first; c; c = d->nodes[c].next) {
        const struct jnode *m = &d->nodes[c];
        size_t k = 0;
        while (k < n &&
               !(fields[k].len == m->key_len && memcmp(fields[k].name, m->key, m->key_len) == 0))
            k++;
        if (k == n) {
            field_path(path, sizeof(path), i, m->key, m->key_len < 64 ? m->key_len : 64);
            return bad(err, path, "unknown field");
        }
        found[k] = m;
    }
    for (size_t k = 0; k < n; k++) {
        if (!found[k]) {
            field_path(path, sizeof(path), i, fields[k].name, fields[k].len);
            return bad(err, path, "missing");
        }
    }
    return 0;
}

static int get_string(const struct jnode *v, size_t max, const char **s, size_t *len)
{
    if (v->type != J_STRING || v->len < 1 || v->len > max)
        return -1;
    *s = v->str;
    *len = v->len;
    return 0;
}

static int bad_change(struct gw_error *err, size_t i, const char *field, const char *what)
{
    char path[64];
    snprintf(path, sizeof(path), "changes[%zu]%s", i, field);
    return bad(err, path, what);
}

static int parse_change(const struct jdoc *d, const struct jnode *obj, size_t i,
                        struct gw_change *out, struct gw_error *err)
{
    static const struct field fields[] = {FIELD("id"), FIELD("key"), FIELD("size")};
    const struct jnode *f[3];
    if (obj->type != J_OBJECT)
        return bad_change(err, i, "", "must be an object");
    int rc = take_fields(d, obj, fields, 3, (long)i, f, err);
    if (rc != 0)
        return rc;
    if (get_string(f[0], GW_CHANGE_ID_MAX, &out->id, &out->id_len) != 0)
        return bad_change(err, i, ".id", "must be a string of 1..128 bytes");
    if (get_string(f[1], GW_KEY_MAX, &out->key, &out->key_len) != 0)
        return bad_change(err, i, ".key", "must be a string of 1..1024 bytes");
    const struct jnode *size = f[2];
    if (size->type != J_INT || size->num < 0 || (uint64_t)size->num > GW_SAFE_INT_MAX)
        return bad_change(err, i, ".size", SIZE_RULE);
    out->size = (uint64_t)size->num;
    return 0;
}

/* Change i, read, joins the batch: its id must be new, the total size stay in range. */
static int admit_change(struct id_set *set, struct gw_batch *out, size_t i, struct gw_error *err)
{
    long prev = id_set_insert(set, out->changes, i);
    if (prev >= 0) {
        char what[64];
        snprintf(what, sizeof(what), "duplicate of changes[%ld].id", prev);
        return bad_change(err, i, ".id", what);
    }
    out->total_size += out->changes[i].size;
    if (out->total_size > GW_SAFE_INT_MAX)
        return bad(err, "changes", "total size exceeds 9007199254740991");
    return 0;
}

static int parse_changes(const struct jdoc *d, const struct jnode *list, struct gw_batch *out,
                         struct gw_error *err)
{
    struct id_set set;
    if (id_set_init(&set, out->count) != 0)
        return -ENOMEM;
    int rc = 0;
    uint32_t c = list->first;
    for (size_t i = 0; rc == 0 && i < out->count; i++, c = d->nodes[c].next) {
        rc = parse_change(d, &d->nodes[c], i, &out->changes[i], err);
        if (rc == 0)
            rc = admit_change(&set, out, i, err);
    }
    free(set.slots);
    return rc;
}

/* A canonical batch's changes, read: each admitted in order, as the strict reader would. */
static int admit_changes(struct gw_batch *out, struct gw_error *err)
{
    struct id_set set;
    if (id_set_init(&set, out->count) != 0)
        return -ENOMEM;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < out->count; i++)
        rc = admit_change(&set, out, i, err);
    free(set.slots);
    return rc;
}

static int parse_root(const struct jdoc *d, size_t max_changes, struct gw_batch *out,
                      struct gw_error *err)
{
    static const struct field fields[] = {FIELD("batch_id"), FIELD("changes")};
    const struct jnode *f[2];
    const struct jnode *root = &d->nodes[0];
    if (root->type != J_OBJECT)
        return bad(err, "$", "must be an object {\"batch_id\": ..., \"changes\": [...]}");
    int rc = take_fields(d, root, fields, 2, -1, f, err);
    if (rc != 0)
        return rc;
    const struct jnode *id = f[0];
    if (id->type != J_STRING || !gw_name_valid(id->str, id->len, GW_BATCH_ID_MAX))
        return bad(err, "batch_id", "must be 1..128 bytes of [A-Za-z0-9._:-]");
    out->batch_id = id->str;
    out->batch_id_len = id->len;
    const struct jnode *list = f[1];
    if (list->type != J_ARRAY)
        return bad(err, "changes", "must be an array");
    out->count = list->count;
    if (out->count < 1 || out->count > max_changes) {
        gw_error_set(err, "changes", "must hold 1..%zu changes, not %zu", max_changes, out->count);
        return -EINVAL;
    }
    out->changes = calloc(out->count, sizeof(*out->changes));
    if (!out->changes)
        return -ENOMEM;
    return parse_changes(d, list, out, err);
}

/* The canonical batch: what "same content" means for idempotency (docs/journal.md §3). */
static int compute_fingerprint(struct gw_batch *b)
{
    struct gw_buf c;
    gw_buf_init(&c);
    gw_buf_puts(&c, "{\"batch_id\":");
    gw_buf_json_string(&c, b->batch_id, b->batch_id_len);
    gw_buf_puts(&c, ",\"changes\":[");
    for (size_t i = 0; i < b->count; i++) {
        gw_buf_puts(&c, i ? ",{\"id\":" : "{\"id\":");
        gw_buf_json_string(&c, b->changes[i].id, b->changes[i].id_len);
        gw_buf_puts(&c, ",\"key\":");
        gw_buf_json_string(&c, b->changes[i].key, b->changes[i].key_len);
        gw_buf_puts(&c, ",\"size\":");
        gw_buf_u64(&c, b->changes[i].size);
        gw_buf_puts(&c, "}");
    }
    gw_buf_puts(&c, "]}");
    int rc = c.failed ? -ENOMEM : 0;
    if (rc == 0 && !EVP_Digest(c.data, c.len, b->fingerprint, NULL, EVP_sha256(), NULL))
        rc = -ENOMEM;
    gw_buf_free(&c);
    return rc;
}

/* What the reader may build for a batch (docs/api.md §3.1): no valid batch has more
 * values than 3 + 4 per change, nor more than one per 7 bytes (a change takes 30 bytes at
 * least), nor more array elements than changes; 64 spare values keep small documents' own
 * errors. The reader stops at the first value past these, so its nodes (48 bytes a value)
 * are bounded by the schema, not by the body. */
static struct json_limits batch_limits(size_t len, size_t max_changes)
{
    size_t by_changes = 3 + 4 * max_changes, by_bytes = 64 + len / 7;
    return (struct json_limits){.max_values = by_changes < by_bytes ? by_changes : by_bytes,
                                .max_elements = max_changes};
}

static void report_read_error(const char *data, const struct jdoc *d, int rc, size_t max_changes,
                              struct gw_error *err)
{
    size_t line, column;
    if (rc == -E2BIG) {
        gw_error_set(err, d->path, "%s: a batch holds at most %zu changes of 3 fields", d->what,
                     max_changes);
    } else if (rc == -EINVAL) {
        json_position(data, d->error_at, &line, &column);
        gw_error_set(err, "$", "invalid JSON at line %zu column %zu: %s", line, column, d->what);
    }
}

/* Any batch: the document read whole, then the schema, then the fingerprint. */
static int parse_any(const char *data, size_t len, size_t max_changes, struct gw_batch *out,
                     struct gw_error *err)
{
    struct jdoc d;
    struct json_limits limits = batch_limits(len, max_changes);
    int rc = json_read(data, len, &limits, &d);
    report_read_error(data, &d, rc, max_changes, err);
    if (rc == -E2BIG)
        rc = -EINVAL;
    if (rc == 0) {
        out->doc = d.arena; /* the strings of the batch live on in the arena */
        d.arena = NULL;
        rc = parse_root(&d, max_changes, out, err);
    }
    json_doc_free(&d);
    return rc == 0 ? compute_fingerprint(out) : rc;
}

int gw_batch_parse(const char *data, size_t len, size_t max_changes, struct gw_batch *out,
                   struct gw_error *err)
{
    memset(out, 0, sizeof(*out));
    int rc = gw_batch_read_canonical(data, len, max_changes, out);
    if (rc == 1)
        rc = admit_changes(out, err);
    else if (rc == 0)
        rc = parse_any(data, len, max_changes, out, err);
    if (rc == -ENOMEM)
        gw_error_set(err, "", "out of memory");
    if (rc != 0)
        gw_batch_free(out);
    return rc;
}

void gw_batch_free(struct gw_batch *b)
{
    free(b->doc);
    free(b->changes);
    memset(b, 0, sizeof(*b));
}
