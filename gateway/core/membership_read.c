/* The membership's fast path: json_read's flat nodes, every field checked as the strict path
 * checks it; on any doubt it declines and the strict path decides (docs/decisions.md §6). */
#include "membership_read.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json_read.h"

#define DECLINED 1

static int key_is(const struct jnode *n, const char *name)
{
    return n->key_len == strlen(name) && memcmp(n->key, name, n->key_len) == 0;
}

static int read_state(const struct jnode *v, enum gw_shard_state *out)
{
    return v->type == J_STRING && gw_state_parse(v->str, v->len, out) == 0 ? 0 : DECLINED;
}

static int read_uint(const struct jnode *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (v->type != J_INT || v->num < 0 || (uint64_t)v->num < lo || (uint64_t)v->num > hi)
        return DECLINED;
    *out = (uint64_t)v->num;
    return 0;
}

/* One shard object, each of its members once (json_read refuses duplicate names). */
static int read_shard(const struct jdoc *d, const struct jnode *obj, struct gw_shard *out)
{
    int seen = 0; /* bits: id, state, capacity */
    uint64_t capacity = 0, weight = 1;
    if (obj->type != J_OBJECT)
        return DECLINED;
    for (uint32_t i = obj->first; i != 0; i = d->nodes[i].next) {
        const struct jnode *v = &d->nodes[i];
        int rc = DECLINED;
        if (key_is(v, "id") && v->type == J_STRING &&
            gw_name_valid(v->str, v->len, GW_SHARD_ID_MAX)) {
            memcpy(out->id, v->str, v->len);
            out->id[v->len] = '\0';
            out->id_len = v->len;
            seen |= 1, rc = 0;
        } else if (key_is(v, "state")) {
            rc = read_state(v, &out->state);
            seen |= 2;
        } else if (key_is(v, "capacity")) {
            rc = read_uint(v, 0, GW_SAFE_INT_MAX, &capacity);
            seen |= 4;
        } else if (key_is(v, "weight")) {
            rc = read_uint(v, 1, 1000, &weight);
        }
        if (rc != 0)
            return DECLINED;
    }
    if (seen != 7)
        return DECLINED;
    out->capacity = capacity;
    out->weight = (uint32_t)weight;
    return 0;
}

/* The root object holding only "shards", an array: its node, or 0. */
static uint32_t shards_array(const struct jdoc *d)
{
    const struct jnode *root = &d->nodes[0];
    if (root->type != J_OBJECT || root->count != 1)
        return 0;
    const struct jnode *list = &d->nodes[root->first];
    return key_is(list, "shards") && list->type == J_ARRAY ? root->first : 0;
}

int gw_membership_read_fast(const char *text, size_t len, struct gw_shard **shards, size_t *count)
{
    struct jdoc d;
    *shards = NULL;
    *count = 0;
    int rc = json_read(text, len, NULL, &d);
    uint32_t list = rc == 0 ? shards_array(&d) : 0;
    if (rc == -ENOMEM || list == 0) {
        json_doc_free(&d);
        return rc == -ENOMEM ? -ENOMEM : DECLINED;
    }
    size_t n = d.nodes[list].count;
    struct gw_shard *out = calloc(n ? n : 1, sizeof(*out));
    rc = out ? 0 : -ENOMEM;
    size_t k = 0;
    for (uint32_t i = d.nodes[list].first; rc == 0 && i != 0; i = d.nodes[i].next)
        rc = read_shard(&d, &d.nodes[i], &out[k++]);
    json_doc_free(&d);
    if (rc != 0) {
        free(out);
        return rc;
    }
    *shards = out;
    *count = n;
    return 0;
}
