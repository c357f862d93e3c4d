/* Shards file validator (docs/contract.md §2): ids, states, capacities, weights; sorted by id. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "membership.h"

const char *hc_state_name(enum hc_state s)
{
    switch (s) {
    case HC_STATE_ONLINE:
        return "online";
    case HC_STATE_DRAINING:
        return "draining";
    default:
        return "offline";
    }
}

int hc_id_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c != 0)
        return c;
    return alen < blen ? -1 : alen > blen;
}

static int hc_shard_cmp(const void *pa, const void *pb)
{
    const struct hc_shard *a = pa, *b = pb;
    return hc_id_cmp(a->id, a->id_len, b->id, b->id_len);
}

static int hc_id_valid(const char *s, size_t n)
{
    static const char ok[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-";
    if (n < 1 || n > HC_SHARD_ID_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\0' || strchr(ok, s[i]) == NULL)
            return 0;
    return 1;
}

/* Validates one shard object into sh. Returns 0 or -EINVAL with err->msg = "<path>: ...". */
static int hc_shard_from_json(const json_t *o, const char *prefix, size_t i, struct hc_shard *sh,
                              struct hc_err *err)
{
    if (!json_is_object(o))
        return hc_err_set(err, -EINVAL, "%s[%zu]: must be an object", prefix, i);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        if (strcmp(key, "id") != 0 && strcmp(key, "state") != 0 && strcmp(key, "capacity") != 0 &&
            strcmp(key, "weight") != 0)
            return hc_err_set(err, -EINVAL, "%s[%zu].%s: unknown field", prefix, i, key);
    }
    json_t *id = json_object_get(o, "id");
    if (id == NULL)
        return hc_err_set(err, -EINVAL, "%s[%zu].id: missing", prefix, i);
    if (!json_is_string(id) || !hc_id_valid(json_string_value(id), json_string_length(id)))
        return hc_err_set(err, -EINVAL, "%s[%zu].id: must be 1..64 bytes of [A-Za-z0-9._:-]",
                          prefix, i);
    sh->id_len = json_string_length(id);
    memcpy(sh->id, json_string_value(id), sh->id_len + 1);

    json_t *st = json_object_get(o, "state");
    if (st == NULL)
        return hc_err_set(err, -EINVAL, "%s[%zu].state: missing", prefix, i);
    const char *s = json_is_string(st) ? json_string_value(st) : "";
    if (json_is_string(st) && strcmp(s, "online") == 0)
        sh->state = HC_STATE_ONLINE;
    else if (json_is_string(st) && strcmp(s, "draining") == 0)
        sh->state = HC_STATE_DRAINING;
    else if (json_is_string(st) && strcmp(s, "offline") == 0)
        sh->state = HC_STATE_OFFLINE;
    else
        return hc_err_set(err, -EINVAL, "%s[%zu].state: must be one of online, draining, offline",
                          prefix, i);

    json_t *cap = json_object_get(o, "capacity");
    if (cap == NULL)
        return hc_err_set(err, -EINVAL, "%s[%zu].capacity: missing", prefix, i);
    if (!json_is_integer(cap) || json_integer_value(cap) < 0 ||
        json_integer_value(cap) > HC_SAFE_INT_MAX)
        return hc_err_set(err, -EINVAL, "%s[%zu].capacity: must be an integer 0..%lld", prefix, i,
                          HC_SAFE_INT_MAX);
    sh->capacity = json_integer_value(cap);

    json_t *w = json_object_get(o, "weight");
    sh->weight = 1; /* the only defaulted field (docs/contract.md §2) */
    if (w != NULL) {
        if (!json_is_integer(w) || json_integer_value(w) < 1 ||
            json_integer_value(w) > HC_WEIGHT_MAX)
            return hc_err_set(err, -EINVAL, "%s[%zu].weight: must be an integer 1..%d", prefix, i,
                              HC_WEIGHT_MAX);
        sh->weight = (unsigned)json_integer_value(w);
    }
    return 0;
}

/* Rules R1 and R2 of docs/contract.md (section 2): walking shards[] in file order, the running
 * sum of capacities (any state) stays <= 2^53-1, and the running sum of VNODES * weight over
 * online shards stays <= 2^24 ring points (under jump 160 a unit of weight; under maglev: the
 * count of online shards stays <= the table's slots). The first shard that goes over is named. */
static int hc_membership_limits(const struct hc_shard *sh, size_t n, const char *prefix,
                                const struct hc_contract *c, struct hc_err *err)
{
    uint64_t capacity = 0, points = 0, online = 0;
    for (size_t i = 0; i < n; i++) {
        capacity += (uint64_t)sh[i].capacity; /* each <= 2^53-1: no wrap before the check */
        if (capacity > (uint64_t)HC_SAFE_INT_MAX)
            return hc_err_set(err, -EINVAL, "%s[%zu].capacity: sum of capacities exceeds %lld",
                              prefix, i, HC_SAFE_INT_MAX);
        online += sh[i].state == HC_STATE_ONLINE;
        if (c->ring == HC_RING_MAGLEV && online > c->table)
            return hc_err_set(err, -EINVAL,
                              "%s[%zu].state: more online shards than DISPATCH_MAGLEV_TABLE (%u)",
                              prefix, i, c->table);
        if (sh[i].state == HC_STATE_ONLINE)
            points +=
                (uint64_t)(c->ring == HC_RING_JUMP ? HC_JUMP_VNODES : c->vnodes) * sh[i].weight;
        if (points > HC_RING_POINTS_MAX)
            return hc_err_set(err, -EINVAL, "%s[%zu].weight: ring exceeds %llu points", prefix, i,
                              (unsigned long long)HC_RING_POINTS_MAX);
    }
    return 0;
}

int hc_membership_from_json(const json_t *arr, const char *prefix, const struct hc_contract *c,
                            struct hc_membership *m, struct hc_err *err)
{
    m->shards = NULL;
    m->n = 0;
    if (!json_is_array(arr))
        return hc_err_set(err, -EINVAL, "%s: must be an array", prefix);
    size_t n = json_array_size(arr);
    struct hc_shard *sh = calloc(n ? n : 1, sizeof *sh);
    if (sh == NULL)
        return hc_err_set(err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        int rc = hc_shard_from_json(json_array_get(arr, i), prefix, i, &sh[i], err);
        if (rc != 0) {
            free(sh);
            return rc;
        }
        for (size_t j = 0; j < i; j++) {
            if (hc_shard_cmp(&sh[i], &sh[j]) == 0) {
                hc_err_set(err, -EINVAL, "%s[%zu].id: duplicate id %s (also %s[%zu])", prefix, i,
                           sh[i].id, prefix, j);
                free(sh);
                return -EINVAL;
            }
        }
    }
    int rc = hc_membership_limits(sh, n, prefix, c, err);
    if (rc != 0) {
        free(sh);
        return rc;
    }
    qsort(sh, n, sizeof *sh, hc_shard_cmp);
    m->shards = sh;
    m->n = n;
    return 0;
}

int hc_membership_load(const char *path, const struct hc_contract *c, struct hc_membership *m,
                       struct hc_err *err)
{
    json_error_t jerr;
    struct hc_err what;
    m->shards = NULL;
    m->n = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        int e = errno;
        return hc_err_set(err, -e, "%s: $: cannot open: %s", path, strerror(e));
    }
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
    fclose(f);
    if (root == NULL) {
        return hc_err_set(err, -EINVAL, "%s: $: invalid JSON at line %d column %d: %s", path,
                          jerr.line, jerr.column, jerr.text);
    }
    int rc;
    if (!json_is_object(root) || json_object_size(root) != 1 ||
        json_object_get(root, "shards") == NULL) {
        rc = hc_err_set(err, -EINVAL, "%s: $: must be an object with exactly the key \"shards\"",
                        path);
    } else {
        rc = hc_membership_from_json(json_object_get(root, "shards"), "shards", c, m, &what);
        if (rc != 0)
            hc_err_set(err, rc, "%s: %s", path, what.msg);
    }
    json_decref(root);
    return rc;
}

void hc_membership_free(struct hc_membership *m)
{
    free(m->shards);
    m->shards = NULL;
    m->n = 0;
}

long hc_membership_find(const struct hc_membership *m, const char *id, size_t len)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = hc_id_cmp(m->shards[mid].id, m->shards[mid].id_len, id, len);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}
