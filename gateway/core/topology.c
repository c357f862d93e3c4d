/* Topology: which shards are in the ring (online ones only: a whitelist) and its totals. */
#include "topology.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Renders what every receipt of t repeats (struct gw_topology): the online shards' ids as JSON
 * strings, then the ring object up to its points. Returns 0 or -ENOMEM. */
static int render_once(struct gw_topology *t)
{
    uint32_t n = ring_shard_count(t->ring);
    t->shard_at = malloc(((size_t)n + 1) * sizeof(*t->shard_at));
    if (!t->shard_at)
        return -ENOMEM;
    for (uint32_t s = 0; s < n; s++) {
        t->shard_at[s] = (uint32_t)t->shard_json.len;
        gw_buf_json_string(&t->shard_json, ring_shard_id(t->ring, s),
                           ring_shard_id_len(t->ring, s));
        if (t->shard_json.len - t->shard_at[s] > t->shard_json_max)
            t->shard_json_max = t->shard_json.len - t->shard_at[s];
    }
    t->shard_at[n] = (uint32_t)t->shard_json.len;
    struct gw_buf *out = &t->ring_json;
    gw_buf_puts(out, "{\"id\":\"");
    gw_buf_puts(out, ring_id(t->ring));
    gw_buf_puts(out, "\",\"algorithm\":\"");
    gw_buf_puts(out, ring_algorithm_name(ring_algorithm_of(t->ring)));
    gw_buf_puts(out, "\",\"hash\":\"");
    gw_buf_puts(out, ring_digest_name(ring_digest_of(t->ring)));
    if (ring_algorithm_of(t->ring) != RING_KETAMA) {
        gw_buf_field_u64(out, "\",\"table\":", ring_table_size(t->ring));
    } else {
        gw_buf_field_u64(out, "\",\"vnodes\":", ring_vnodes(t->ring));
        gw_buf_field_u64(out, ",\"vnodes_total\":", ring_points_total(t->ring));
    }
    gw_buf_puts(out, ",\"online\":[");
    for (uint32_t s = 0; s < n; s++) {
        if (s)
            gw_buf_puts(out, ",");
        gw_topology_shard_json(t, out, s);
    }
    gw_buf_puts(out, "]");
    return t->shard_json.failed || out->failed ? -ENOMEM : 0;
}

int gw_topology_build(const struct gw_contract *contract, struct gw_membership *members,
                      struct gw_topology *out, struct gw_error *err)
{
    return gw_topology_build_from(contract, members, NULL, out, err);
}

int gw_topology_build_from(const struct gw_contract *contract, struct gw_membership *members,
                           const struct ring *prev, struct gw_topology *out, struct gw_error *err)
{
    memset(out, 0, sizeof(*out));
    out->contract = *contract;
    out->members = *members;
    memset(members, 0, sizeof(*members));
    size_t n = out->members.count;
    struct ring_shard *online = malloc((n ? n : 1) * sizeof(*online));
    out->member_of = malloc((n ? n : 1) * sizeof(*out->member_of));
    if (!online || !out->member_of) {
        free(online);
        gw_topology_free(out);
        gw_error_set(err, "", "out of memory");
        return -ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const struct gw_shard *s = &out->members.shards[i];
        if (s->state != GW_STATE_ONLINE)
            continue;
        online[k] = (struct ring_shard){s->id, s->id_len, s->weight};
        out->member_of[k++] = (uint32_t)i; /* both lists are in id order */
        out->capacity += s->capacity;      /* <= 2^53 - 1 by rule R1 (docs/contract.md) */
    }
    int rc = gw_epoch_id(&out->contract, &out->members, out->epoch, err);
    if (rc != 0) {
        free(online);
        gw_topology_free(out);
        return rc;
    }
    struct ring_error rerr;
    if (contract->algorithm == RING_MAGLEV)
        rc = ring_build_maglev(&out->ring, contract->digest, contract->table, online, k, &rerr);
    else if (contract->algorithm == RING_JUMP)
        rc = ring_build_jump_from(&out->ring, prev, contract->digest, contract->table, online, k,
                                  &rerr);
    else
        rc =
            ring_build_from(&out->ring, prev, contract->digest, contract->vnodes, online, k, &rerr);
    free(online);
    if (rc != 0)
        gw_error_set(err, "", "ring: %s", rerr.msg);
    else if ((rc = render_once(out)) != 0)
        gw_error_set(err, "", "out of memory");
    if (rc != 0)
        gw_topology_free(out);
    return rc;
}

int gw_topology_load(const char *conf_path, const char *shards_path, struct gw_topology *out,
                     struct gw_error *err)
{
    struct gw_contract contract;
    struct gw_membership members;
    memset(out, 0, sizeof(*out));
    int rc = gw_contract_load(conf_path, &contract, err);
    if (rc == 0)
        rc = gw_membership_load(shards_path, &members, err);
    if (rc == 0 && (rc = gw_membership_check_ring(&members, &contract, shards_path, err)))
        gw_membership_free(&members);
    if (rc == 0)
        rc = gw_topology_build(&contract, &members, out, err);
    return rc;
}

void gw_topology_free(struct gw_topology *t)
{
    ring_free(t->ring);
    free(t->member_of);
    free(t->shard_at);
    gw_buf_free(&t->shard_json);
    gw_buf_free(&t->ring_json);
    gw_membership_free(&t->members);
    memset(t, 0, sizeof(*t));
}
