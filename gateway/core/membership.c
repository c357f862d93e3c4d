/* Membership loading: strict schema, every fault named by its JSON path. */
#include "membership.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "membership_read.h"

static int fail(struct gw_error *err, const char *name, const char *path, const char *what)
{
    snprintf(err->path, sizeof(err->path), "%s", path);
    snprintf(err->msg, sizeof(err->msg), "shards: %s: %s: %s", name, path, what);
    return -EINVAL;
}

/* Out of memory says nothing about the file: -ENOMEM, exit 1 (docs/decisions.md §28). */
static int no_memory(struct gw_error *err, const char *name)
{
    fail(err, name, "shards", "out of memory");
    return -ENOMEM;
}

static int parse_state(json_t *v, enum gw_shard_state *out)
{
    return gw_state_parse(json_string_value(v), json_string_length(v), out);
}

static int parse_uint(json_t *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return -1;
    uint64_t n = (uint64_t)json_integer_value(v);
    if (n < lo || n > hi)
        return -1;
    *out = n;
    return 0;
}

/* Validates one shard object; `path` is "shards[i]". */
static int parse_shard(json_t *obj, const char *name, const char *path, struct gw_shard *out,
                       struct gw_error *err)
{
    char at[96];
    if (!json_is_object(obj))
        return fail(err, name, path, "must be an object");
    const char *field;
    json_t *v;
    json_object_foreach(obj, field, v)
    {
        if (strcmp(field, "id") && strcmp(field, "state") && strcmp(field, "capacity") &&
            strcmp(field, "weight")) {
            /* An empty name would leave nothing after the dot; bracket notation names it. */
            if (field[0] == '\0')
                snprintf(at, sizeof(at), "%s[\"\"]", path);
            else
                snprintf(at, sizeof(at), "%s.%.32s", path, field);
            return fail(err, name, at, "unknown field");
        }
    }
    json_t *id = json_object_get(obj, "id");
    snprintf(at, sizeof(at), "%s.id", path);
    if (!id)
        return fail(err, name, at, "missing");
    if (!json_is_string(id) ||
        !gw_name_valid(json_string_value(id), json_string_length(id), GW_SHARD_ID_MAX))
        return fail(err, name, at, "must be 1..64 bytes of [A-Za-z0-9._:-]");
    memcpy(out->id, json_string_value(id), json_string_length(id) + 1);
    out->id_len = json_string_length(id);
    snprintf(at, sizeof(at), "%s.state", path);
    if (!json_object_get(obj, "state"))
        return fail(err, name, at, "missing");
    if (parse_state(json_object_get(obj, "state"), &out->state) != 0)
        return fail(err, name, at, "must be one of online, draining, offline");
    snprintf(at, sizeof(at), "%s.capacity", path);
    if (!json_object_get(obj, "capacity"))
        return fail(err, name, at, "missing");
    if (parse_uint(json_object_get(obj, "capacity"), 0, GW_SAFE_INT_MAX, &out->capacity) != 0)
        return fail(err, name, at, "must be an integer 0..9007199254740991");
    uint64_t weight = 1; /* the one documented default of the membership (docs/contract.md §2) */
    snprintf(at, sizeof(at), "%s.weight", path);
    json_t *w = json_object_get(obj, "weight");
    if (w && parse_uint(w, 1, 1000, &weight) != 0)
        return fail(err, name, at, "must be an integer 1..1000");
    out->weight = (uint32_t)weight;
    return 0;
}

static int shard_compare(const void *pa, const void *pb)
{
    const struct gw_shard *a = pa, *b = pb;
    int c = memcmp(a->id, b->id, a->id_len < b->id_len ? a->id_len : b->id_len);
    return c ? c : (a->id_len > b->id_len) - (a->id_len < b->id_len);
}

static size_t find_id(const struct gw_shard *shards, size_t n, size_t from,
                      const struct gw_shard *key)
{
    for (size_t j = from; j < n; j++)
        if (shard_compare(&shards[j], key) == 0)
            return j;
    return n;
}

/* Sorts the shards by id; on a duplicate id, names its two places in input order. */
static int sort_unique(struct gw_shard *shards, size_t n, const char *name, struct gw_error *err)
{
    struct gw_shard *sorted = malloc((n ? n : 1) * sizeof(*sorted));
    if (!sorted)
        return no_memory(err, name);
    memcpy(sorted, shards, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), shard_compare);
    for (size_t i = 1; i < n; i++) {
        if (shard_compare(&sorted[i - 1], &sorted[i]) != 0)
            continue;
        size_t first = find_id(shards, n, 0, &sorted[i]);
        size_t second = find_id(shards, n, first + 1, &sorted[i]);
        free(sorted);
        char at[48], what[64];
        snprintf(at, sizeof(at), "shards[%zu].id", second);
        snprintf(what, sizeof(what), "duplicate of shards[%zu].id", first);
        return fail(err, name, at, what);
    }
    memcpy(shards, sorted, n * sizeof(*sorted));
    free(sorted);
    return 0;
}

/* Rule R1 (docs/contract.md, Membership): every capacity sum stays an exact JSON integer. */
static int check_capacity_sum(uint64_t *sum, const struct gw_shard *s, const char *name,
                              struct gw_error *err)
{
    *sum += s->capacity; /* each term <= 2^53 - 1 and the sum so far too: cannot wrap */
    if (*sum <= GW_SAFE_INT_MAX)
        return 0;
    char at[48];
    snprintf(at, sizeof(at), "shards[%zu].capacity", s->file_index);
    return fail(err, name, at, "sum of capacities exceeds 9007199254740991");
}

/* Shard i in file order: its place, the online weight so far (rule R2) and rule R1's sum. */
static int account_shard(struct gw_shard *s, size_t i, uint64_t *capacity, uint64_t *weight,
                         const char *name, struct gw_error *err)
{
    s->file_index = i;
    *weight += s->state == GW_STATE_ONLINE ? s->weight : 0;
    s->online_weight = *weight;
    return check_capacity_sum(capacity, s, name, err);
}

static int parse_list(json_t *list, const char *name, struct gw_membership *out,
                      struct gw_error *err)
{
    if (!json_is_array(list))
        return fail(err, name, "shards", list ? "must be an array" : "missing");
    size_t n = json_array_size(list);
    out->shards = calloc(n ? n : 1, sizeof(*out->shards));
    if (!out->shards)
        return no_memory(err, name);
    uint64_t capacity = 0, weight = 0;
    for (size_t i = 0; i < n; i++) {
        char at[32];
        struct gw_shard *s = &out->shards[i];
        snprintf(at, sizeof(at), "shards[%zu]", i);
        int rc = parse_shard(json_array_get(list, i), name, at, s, err);
        if (rc == 0)
            rc = account_shard(s, i, &capacity, &weight, name, err);
        if (rc != 0)
            return rc;
    }
    out->count = n;
    return sort_unique(out->shards, n, name, err);
}

/* The fast path's shards (each valid by itself) through the same rules across shards as
 * parse_list: the same first fault, the same message. */
static int settle_list(struct gw_membership *out, const char *name, struct gw_error *err)
{
    uint64_t capacity = 0, weight = 0;
    for (size_t i = 0; i < out->count; i++) {
        int rc = account_shard(&out->shards[i], i, &capacity, &weight, name, err);
        if (rc != 0)
            return rc;
    }
    return sort_unique(out->shards, out->count, name, err);
}

static int parse_root(json_t *root, const char *name, struct gw_membership *out,
                      struct gw_error *err)
{
    if (!json_is_object(root))
        return fail(err, name, "$", "must be an object {\"shards\": [...]}");
    const char *field;
    json_t *v;
    json_object_foreach(root, field, v)
    {
        if (strcmp(field, "shards") != 0)
            return fail(err, name, field[0] ? field : "$[\"\"]", "unknown field");
    }
    return parse_list(json_object_get(root, "shards"), name, out, err);
}

int gw_membership_from_json(json_t *list, const char *name, struct gw_membership *out,
                            struct gw_error *err)
{
    memset(out, 0, sizeof(*out));
    int rc = parse_list(list, name, out, err);
    if (rc != 0)
        gw_membership_free(out);
    return rc;
}

/* Rule R2 for ketama: the running sum of vnodes * weight over online shards. */
static int check_points(const struct gw_membership *m, uint32_t vnodes, const char *name,
                        struct gw_error *err)
{
    /* The running sum only grows, so the first shard over is the online one, in file order,
     * with the smallest file index among those over. online_weight <= 1000 * count: no wrap. */
    size_t first = m->count;
    for (size_t i = 0; i < m->count; i++) {
        const struct gw_shard *s = &m->shards[i];
        if (s->state == GW_STATE_ONLINE &&
            (uint64_t)vnodes * s->online_weight > GW_RING_POINTS_MAX &&
            (first == m->count || s->file_index < m->shards[first].file_index))
            first = i;
    }
    if (first == m->count)
        return 0;
    char at[48];
    snprintf(at, sizeof(at), "shards[%zu].weight", m->shards[first].file_index);
    return fail(err, name, at, "ring exceeds 16777216 points");
}

/* Rule R2 for maglev: the running count of online shards stays <= the table's slots. */
static int check_slots(const struct gw_membership *m, uint32_t table, const char *name,
                       struct gw_error *err)
{
    size_t online = 0;
    for (size_t i = 0; i < m->count; i++)
        online += m->shards[i].state == GW_STATE_ONLINE;
    if (online <= table)
        return 0;
    char *is_online = calloc(m->count, 1);
    if (!is_online) {
        gw_error_set(err, "", "out of memory");
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->count; i++)
        is_online[m->shards[i].file_index] = m->shards[i].state == GW_STATE_ONLINE;
    size_t at = 0;
    for (online = 0; at < m->count; at++)
        if (is_online[at] && ++online > table)
            break;
    free(is_online);
    char where[48], what[96];
    snprintf(where, sizeof(where), "shards[%zu].state", at);
    snprintf(what, sizeof(what), "more online shards than DISPATCH_MAGLEV_TABLE (%u)", table);
    return fail(err, name, where, what);
}

int gw_membership_check_ring(const struct gw_membership *m, const struct gw_contract *c,
                             const char *name, struct gw_error *err)
{
    if (c->algorithm == RING_MAGLEV)
        return check_slots(m, c->table, name, err);
    return check_points(m, c->algorithm == RING_JUMP ? RING_JUMP_VNODES : c->vnodes, name, err);
}

int gw_membership_parse_tree(const char *text, size_t len, const char *name,
                             struct gw_membership *out, struct gw_error *err)
{
    memset(out, 0, sizeof(*out));
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        char what[300];
        snprintf(what, sizeof(what), "invalid JSON at line %d column %d: %s", jerr.line,
                 jerr.column, jerr.text);
        return fail(err, name, "$", what);
    }
    int rc = parse_root(root, name, out, err);
    json_decref(root);
    if (rc != 0)
        gw_membership_free(out);
    return rc;
}

int gw_membership_parse(const char *text, size_t len, const char *name, struct gw_membership *out,
                        struct gw_error *err)
{
    memset(out, 0, sizeof(*out));
    int rc = gw_membership_read_fast(text, len, &out->shards, &out->count);
    if (rc == 1)
        return gw_membership_parse_tree(text, len, name, out, err);
    if (rc == 0)
        rc = settle_list(out, name, err);
    else
        no_memory(err, name);
    if (rc != 0)
        gw_membership_free(out);
    return rc;
}

int gw_membership_load(const char *path, struct gw_membership *out, struct gw_error *err)
{
    char *text;
    size_t len;
    int rc = gw_file_read(path, &text, &len);
    if (rc != 0) {
        memset(out, 0, sizeof(*out));
        snprintf(err->path, sizeof(err->path), "%s", "");
        snprintf(err->msg, sizeof(err->msg), "shards: %s: cannot read: %s", path, strerror(-rc));
        return rc;
    }
    rc = gw_membership_parse(text, len, path, out, err);
    free(text);
    return rc;
}

void gw_membership_free(struct gw_membership *m)
{
    free(m->shards);
    m->shards = NULL;
    m->count = 0;
}
