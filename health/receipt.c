/* Receipt decoder: checks the receipt's shape (keys, order, types) and borrows its values. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "receipt.h"

struct hc_str hc_str_of(const json_t *s)
{
    struct hc_str v = {json_string_value(s), json_string_length(s)};
    return v;
}

int hc_str_eq(struct hc_str a, const char *b)
{
    return a.n == strlen(b) && memcmp(a.p, b, a.n) == 0;
}

/* Requires obj to be an object with exactly keys[0..n-1] in that order. */
static int hc_keys(const json_t *obj, const char *path, const char *const *keys, size_t n,
                   struct hc_err *err)
{
    if (!json_is_object(obj))
        return hc_err_set(err, -EINVAL, "%s: must be an object", path);
    size_t i = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        if (i >= n || strcmp(key, keys[i]) != 0) {
            for (size_t j = 0; j < n; j++)
                if (strcmp(key, keys[j]) == 0)
                    return hc_err_set(err, -EINVAL, "%s: key %s out of order (expected %s)", path,
                                      key, i < n ? keys[i] : "end");
            return hc_err_set(err, -EINVAL, "%s.%s: unknown key", path, key);
        }
        i++;
    }
    if (i < n)
        return hc_err_set(err, -EINVAL, "%s.%s: missing", path, keys[i]);
    return 0;
}

/* Requires obj to be an object with exactly keys[0..n-1] in that order, or, when `optional`
 * names a key, keys[0..n-1] then that key (docs/contract.md §9 adds such keys under spill). */
static int hc_keys_opt(const json_t *obj, const char *path, const char *const *keys, size_t n,
                       const char *optional, struct hc_err *err)
{
    if (optional != NULL && json_is_object(obj) && json_object_size(obj) == n + 1 &&
        json_object_get(obj, optional) != NULL) {
        const char *key;
        json_t *v;
        size_t i = 0;
        json_object_foreach((json_t *)obj, key, v)
        {
            const char *want = i < n ? keys[i] : optional;
            if (strcmp(key, want) != 0)
                return hc_err_set(err, -EINVAL, "%s: key %s out of order (expected %s)", path, key,
                                  want);
            i++;
        }
        return 0;
    }
    return hc_keys(obj, path, keys, n, err);
}

static int hc_int(const json_t *obj, const char *path, const char *key, int64_t *out,
                  struct hc_err *err)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v))
        return hc_err_set(err, -EINVAL, "%s.%s: must be an integer", path, key);
    *out = json_integer_value(v);
    return 0;
}

static int hc_string(const json_t *obj, const char *path, const char *key, struct hc_str *out,
                     struct hc_err *err)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_string(v))
        return hc_err_set(err, -EINVAL, "%s.%s: must be a string", path, key);
    *out = hc_str_of(v);
    return 0;
}

static int hc_bool(const json_t *obj, const char *path, const char *key, int *out,
                   struct hc_err *err)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_boolean(v))
        return hc_err_set(err, -EINVAL, "%s.%s: must be true or false", path, key);
    *out = json_is_true(v);
    return 0;
}

static const char *const hc_top_keys[] = {"receipt_version", "batch_id", "ring",   "placements",
                                          "shards",          "capacity", "counts", "ok"};
static const char *const hc_top_keys_v2[] = {
    "receipt_version", "batch_id", "epoch",  "ring", "placements",
    "shards",          "capacity", "counts", "ok"};
static const char *const hc_ring_keys[] = {"id",     "algorithm",    "hash",
                                           "vnodes", "vnodes_total", "online"};
static const char *const hc_pl_keys[] = {"id",    "key",   "size",  "hash",
                                         "point", "vnode", "shard", "reason"};
static const char *const hc_ring_keys_maglev[] = {"id", "algorithm", "hash", "table", "online"};
static const char *const hc_pl_keys_maglev[] = {"id", "key", "size", "slot", "shard", "reason"};
static const char *const hc_sh_keys[] = {"state", "weight",   "capacity",
                                         "load",  "received", "over_capacity"};
static const char *const hc_counts_keys[] = {"changes", "dispatched", "over_capacity_shards"};

#define HC_N(a) (sizeof(a) / sizeof((a)[0]))

static int hc_decode_placement(const json_t *o, size_t i, int maglev, struct hc_rplacement *p,
                               struct hc_err *err)
{
    char path[48];
    snprintf(path, sizeof path, "placements[%zu]", i);
    int rc = maglev ? hc_keys(o, path, hc_pl_keys_maglev, HC_N(hc_pl_keys_maglev), err)
                    : hc_keys_opt(o, path, hc_pl_keys, HC_N(hc_pl_keys), "home", err);
    rc = rc ? rc : hc_string(o, path, "id", &p->id, err);
    rc = rc ? rc : hc_string(o, path, "key", &p->key, err);
    rc = rc ? rc : hc_int(o, path, "size", &p->size, err);
    p->hash = p->vnode = 0;
    if (maglev) {
        rc = rc ? rc : hc_int(o, path, "slot", &p->point, err);
    } else {
        rc = rc ? rc : hc_int(o, path, "hash", &p->hash, err);
        rc = rc ? rc : hc_int(o, path, "point", &p->point, err);
        rc = rc ? rc : hc_int(o, path, "vnode", &p->vnode, err);
    }
    rc = rc ? rc : hc_string(o, path, "shard", &p->shard, err);
    rc = rc ? rc : hc_string(o, path, "reason", &p->reason, err);
    p->home.p = NULL;
    p->home.n = 0;
    if (rc == 0 && json_object_get(o, "home") != NULL)
        rc = hc_string(o, path, "home", &p->home, err);
    if (rc == 0 && (p->size < 0 || p->size > 9007199254740991LL))
        rc = hc_err_set(err, -EINVAL, "%s.size: must be an integer 0..9007199254740991", path);
    return rc;
}

static int hc_decode_shard(const char *id, const json_t *o, struct hc_rshard *s, struct hc_err *err)
{
    char path[96];
    snprintf(path, sizeof path, "shards.%.64s", id);
    int rc = hc_keys(o, path, hc_sh_keys, HC_N(hc_sh_keys), err);
    rc = rc ? rc : hc_string(o, path, "state", &s->state, err);
    rc = rc ? rc : hc_int(o, path, "weight", &s->weight, err);
    rc = rc ? rc : hc_int(o, path, "capacity", &s->capacity, err);
    rc = rc ? rc : hc_int(o, path, "load", &s->load, err);
    rc = rc ? rc : hc_int(o, path, "received", &s->received, err);
    rc = rc ? rc : hc_bool(o, path, "over_capacity", &s->over_capacity, err);
    return rc;
}

static int hc_decode_ring(const json_t *root, struct hc_receipt *r, struct hc_err *err)
{
    const json_t *ring = json_object_get(root, "ring");
    const char *algorithm = json_string_value(json_object_get(ring, "algorithm"));
    r->table_form =
        algorithm && (strcmp(algorithm, "maglev") == 0 || strcmp(algorithm, "jump") == 0);
    int rc = r->table_form
                 ? hc_keys(ring, "ring", hc_ring_keys_maglev, HC_N(hc_ring_keys_maglev), err)
                 : hc_keys(ring, "ring", hc_ring_keys, HC_N(hc_ring_keys), err);
    rc = rc ? rc : hc_string(ring, "ring", "id", &r->ring_id, err);
    rc = rc ? rc : hc_string(ring, "ring", "algorithm", &r->algorithm, err);
    rc = rc ? rc : hc_string(ring, "ring", "hash", &r->hash, err);
    if (r->table_form) {
        rc = rc ? rc : hc_int(ring, "ring", "table", &r->table, err);
    } else {
        rc = rc ? rc : hc_int(ring, "ring", "vnodes", &r->vnodes, err);
        rc = rc ? rc : hc_int(ring, "ring", "vnodes_total", &r->vnodes_total, err);
    }
    if (rc != 0)
        return rc;
    const json_t *online = json_object_get(ring, "online");
    if (!json_is_array(online))
        return hc_err_set(err, -EINVAL, "ring.online: must be an array");
    r->n_online = json_array_size(online);
    r->online = calloc(r->n_online ? r->n_online : 1, sizeof *r->online);
    if (r->online == NULL)
        return hc_err_set(err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < r->n_online; i++) {
        const json_t *s = json_array_get(online, i);
        if (!json_is_string(s))
            return hc_err_set(err, -EINVAL, "ring.online[%zu]: must be a string", i);
        r->online[i] = hc_str_of(s);
    }
    return 0;
}

static int hc_decode_counts(const json_t *root, struct hc_receipt *r, struct hc_err *err)
{
    const json_t *counts = json_object_get(root, "counts");
    int rc = hc_keys_opt(counts, "counts", hc_counts_keys, HC_N(hc_counts_keys), "spilled", err);
    rc = rc ? rc : hc_int(counts, "counts", "changes", &r->changes, err);
    rc = rc ? rc : hc_int(counts, "counts", "dispatched", &r->dispatched, err);
    rc = rc ? rc : hc_int(counts, "counts", "over_capacity_shards", &r->over_capacity_shards, err);
    r->has_spilled = json_object_get(counts, "spilled") != NULL;
    if (rc == 0 && r->has_spilled)
        rc = hc_int(counts, "counts", "spilled", &r->spilled, err);
    return rc;
}

static int hc_decode_placements(const json_t *root, struct hc_receipt *r, struct hc_err *err)
{
    const json_t *pl = json_object_get(root, "placements");
    if (!json_is_array(pl))
        return hc_err_set(err, -EINVAL, "placements: must be an array");
    r->n_pl = json_array_size(pl);
    r->pl = malloc((r->n_pl ? r->n_pl : 1) * sizeof *r->pl);
    if (r->pl == NULL)
        return hc_err_set(err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < r->n_pl; i++) {
        int rc = hc_decode_placement(json_array_get(pl, i), i, r->table_form, &r->pl[i], err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int hc_decode_shards(const json_t *root, struct hc_receipt *r, struct hc_err *err)
{
    const json_t *sh = json_object_get(root, "shards");
    if (!json_is_object(sh))
        return hc_err_set(err, -EINVAL, "shards: must be an object");
    r->sh = calloc(json_object_size(sh) ? json_object_size(sh) : 1, sizeof *r->sh);
    if (r->sh == NULL)
        return hc_err_set(err, -ENOMEM, "out of memory");
    const char *id;
    json_t *v;
    json_object_foreach((json_t *)sh, id, v)
    {
        struct hc_rshard *s = &r->sh[r->n_sh++];
        s->id.p = id;
        s->id.n = strlen(id);
        int rc = hc_decode_shard(id, v, s, err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int hc_receipt_decode(const json_t *root, struct hc_receipt *r, struct hc_err *err)
{
    memset(r, 0, sizeof *r);
    const json_t *version = json_object_get(root, "receipt_version");
    int v2 = json_is_integer(version) && json_integer_value(version) == 2;
    int rc;
    if (v2 && json_is_object(root) && json_object_get(root, "epoch") == NULL)
        rc = hc_err_set(err, -EINVAL, "$.epoch: missing (receipt_version 2)");
    else if (v2)
        rc = hc_keys(root, "$", hc_top_keys_v2, HC_N(hc_top_keys_v2), err);
    else
        rc = hc_keys(root, "$", hc_top_keys, HC_N(hc_top_keys), err);
    rc = rc ? rc : hc_int(root, "$", "receipt_version", &r->version, err);
    rc = rc ? rc : hc_string(root, "$", "batch_id", &r->batch_id, err);
    if (v2)
        rc = rc ? rc : hc_string(root, "$", "epoch", &r->epoch, err);
    rc = rc ? rc : hc_int(root, "$", "capacity", &r->capacity, err);
    rc = rc ? rc : hc_bool(root, "$", "ok", &r->ok, err);
    rc = rc ? rc : hc_decode_ring(root, r, err);
    rc = rc ? rc : hc_decode_counts(root, r, err);
    rc = rc ? rc : hc_decode_placements(root, r, err);
    rc = rc ? rc : hc_decode_shards(root, r, err);
    return rc;
}

void hc_receipt_free(struct hc_receipt *r)
{
    free(r->online);
    free(r->pl);
    free(r->sh);
    memset(r, 0, sizeof *r);
}
