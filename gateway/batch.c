/* Batch parsing and validation: the whole batch is accepted or none of it is. */
#include "batch.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "buf.h"
#include "membership.h"

#define SIZE_RULE "must be an integer 0..9007199254740991"

/* Open-addressing set of change ids, to find a duplicate in one pass. */
struct id_set {
    uint32_t *slots; /* change index + 1, 0 when empty */
    size_t mask;
};

static uint64_t fnv1a(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

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
    for (size_t s = fnv1a(c->id, c->id_len) & set->mask;; s = (s + 1) & set->mask) {
        if (set->slots[s] == 0) {
            set->slots[s] = (uint32_t)i + 1;
            return -1;
        }
        const struct gw_change *o = &changes[set->slots[s] - 1];
        if (o->id_len == c->id_len && memcmp(o->id, c->id, c->id_len) == 0)
            return (long)set->slots[s] - 1;
    }
}

static int get_string(json_t *obj, const char *field, size_t max, const char **s, size_t *len)
{
    json_t *v = json_object_get(obj, field);
    if (!json_is_string(v) || json_string_length(v) < 1 || json_string_length(v) > max)
        return -1;
    *s = json_string_value(v);
    *len = json_string_length(v);
    return 0;
}

static int bad(struct gw_error *err, const char *path, const char *what)
{
    gw_error_set(err, path, "%s", what);
    return -EINVAL;
}

static int check_fields(json_t *obj, const char *const *allowed, size_t n, const char *prefix,
                        struct gw_error *err)
{
    const char *field;
    json_t *v;
    json_object_foreach(obj, field, v)
    {
        size_t i = 0;
        while (i < n && strcmp(field, allowed[i]) != 0)
            i++;
        if (i == n) {
            char path[200];
            /* An empty name would leave the path empty; bracket notation still names it. */
            if (field[0] == '\0')
                snprintf(path, sizeof(path), "%s[\"\"]", prefix[0] ? prefix : "$");
            else
                snprintf(path, sizeof(path), "%s%s%.64s", prefix, prefix[0] ? "." : "", field);
            return bad(err, path, "unknown field");
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (!json_object_get(obj, allowed[i])) {
            char path[200];
            snprintf(path, sizeof(path), "%s%s%s", prefix, prefix[0] ? "." : "", allowed[i]);
            return bad(err, path, "missing");
        }
    }
    return 0;
}

static int parse_change(json_t *obj, size_t i, struct gw_change *out, struct gw_error *err)
{
    static const char *const fields[] = {"id", "key", "size"};
    char path[64];
    snprintf(path, sizeof(path), "changes[%zu]", i);
    if (!json_is_object(obj))
        return bad(err, path, "must be an object");
    int rc = check_fields(obj, fields, 3, path, err);
    if (rc != 0)
        return rc;
    snprintf(path, sizeof(path), "changes[%zu].id", i);
    if (get_string(obj, "id", GW_CHANGE_ID_MAX, &out->id, &out->id_len) != 0)
        return bad(err, path, "must be a string of 1..128 bytes");
    snprintf(path, sizeof(path), "changes[%zu].key", i);
    if (get_string(obj, "key", GW_KEY_MAX, &out->key, &out->key_len) != 0)
        return bad(err, path, "must be a string of 1..1024 bytes");
    snprintf(path, sizeof(path), "changes[%zu].size", i);
    json_t *size = json_object_get(obj, "size");
    if (!json_is_integer(size) || json_integer_value(size) < 0 ||
        (uint64_t)json_integer_value(size) > GW_SAFE_INT_MAX)
        return bad(err, path, SIZE_RULE);
    out->size = (uint64_t)json_integer_value(size);
    return 0;
}

static int parse_changes(json_t *list, struct gw_batch *out, struct gw_error *err)
{
    struct id_set set;
    if (id_set_init(&set, out->count) != 0)
        return -ENOMEM;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < out->count; i++) {
        rc = parse_change(json_array_get(list, i), i, &out->changes[i], err);
        if (rc != 0)
            break;
        long prev = id_set_insert(&set, out->changes, i);
        if (prev >= 0) {
            char path[64], what[64];
            snprintf(path, sizeof(path), "changes[%zu].id", i);
            snprintf(what, sizeof(what), "duplicate of changes[%ld].id", prev);
            rc = bad(err, path, what);
        }
        out->total_size += out->changes[i].size;
        if (rc == 0 && out->total_size > GW_SAFE_INT_MAX)
            rc = bad(err, "changes", "total size exceeds 9007199254740991");
    }
    free(set.slots);
    return rc;
}

static int parse_root(json_t *root, size_t max_changes, struct gw_batch *out, struct gw_error *err)
{
    static const char *const fields[] = {"batch_id", "changes"};
    if (!json_is_object(root))
        return bad(err, "$", "must be an object {\"batch_id\": ..., \"changes\": [...]}");
    int rc = check_fields(root, fields, 2, "", err);
    if (rc != 0)
        return rc;
    json_t *id = json_object_get(root, "batch_id");
    if (!json_is_string(id) ||
        !gw_name_valid(json_string_value(id), json_string_length(id), GW_BATCH_ID_MAX))
        return bad(err, "batch_id", "must be 1..128 bytes of [A-Za-z0-9._:-]");
    out->batch_id = json_string_value(id);
    out->batch_id_len = json_string_length(id);
    json_t *list = json_object_get(root, "changes");
    if (!json_is_array(list))
        return bad(err, "changes", "must be an array");
    out->count = json_array_size(list);
    if (out->count < 1 || out->count > max_changes) {
        gw_error_set(err, "changes", "must hold 1..%zu changes, not %zu", max_changes, out->count);
        return -EINVAL;
    }
    out->changes = calloc(out->count, sizeof(*out->changes));
    if (!out->changes)
        return -ENOMEM;
    return parse_changes(list, out, err);
}

/* The canonical batch: what "same content" means for idempotency (DESIGN §6). */
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

int gw_batch_parse(const char *data, size_t len, size_t max_changes, struct gw_batch *out,
                   struct gw_error *err)
{
    memset(out, 0, sizeof(*out));
    json_error_t jerr;
    json_t *root = json_loadb(data, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!root) {
        gw_error_set(err, "$", "invalid JSON at line %d column %d: %s", jerr.line, jerr.column,
                     jerr.text);
        return -EINVAL;
    }
    out->doc = root;
    int rc = parse_root(root, max_changes, out, err);
    if (rc == 0)
        rc = compute_fingerprint(out);
    if (rc == -ENOMEM)
        gw_error_set(err, "", "out of memory");
    if (rc != 0)
        gw_batch_free(out);
    return rc;
}

void gw_batch_free(struct gw_batch *b)
{
    json_decref(b->doc);
    free(b->changes);
    memset(b, 0, sizeof(*b));
}
