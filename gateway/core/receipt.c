/* Receipt, ring and lookup JSON, streamed into a buffer: no tree is built per placement. */
#include "receipt.h"

#include <stdio.h>
#include <string.h>

#include "spill.h"

/* The placement fields after the change's own: hash, point, vnode, shard. */
static void write_placement_where(struct gw_buf *out, const struct gw_topology *t,
                                  const struct ring_placement *p)
{
    gw_buf_field_u64(out, ",\"hash\":", p->hash);
    gw_buf_field_u64(out, ",\"point\":", p->point);
    gw_buf_field_u64(out, ",\"vnode\":", p->vnode);
    gw_buf_puts(out, ",\"shard\":");
    gw_topology_shard_json(t, out, p->shard);
}

/* ... then the reason of a placement at its home point; on a Maglev or jump ring, its slot, shard
 * and reason "table" (docs/contract.md §11, §10). */
static void write_placement_tail(struct gw_buf *out, const struct gw_topology *t,
                                 const struct ring_placement *p)
{
    if (t->contract.algorithm != RING_KETAMA) {
        gw_buf_field_u64(out, ",\"slot\":", p->point);
        gw_buf_puts(out, ",\"shard\":");
        gw_topology_shard_json(t, out, p->shard);
        gw_buf_puts(out, ",\"reason\":\"table\"}");
        return;
    }
    write_placement_where(out, t, p);
    gw_buf_puts(out, p->wrapped ? ",\"reason\":\"wrap\"}" : ",\"reason\":\"ring\"}");
}

/* A Maglev or jump ring's slots: the shard of each, in slot order. */
static void write_slots(struct gw_buf *out, const struct gw_topology *t)
{
    const uint32_t *table = ring_table(t->ring);
    gw_buf_puts(out, ",\"slots\":[");
    for (size_t s = 0; table && s < ring_table_size(t->ring); s++) {
        if (s)
            gw_buf_puts(out, ",");
        gw_topology_shard_json(t, out, table[s]);
    }
    gw_buf_puts(out, "]");
}

static void write_points(struct gw_buf *out, const struct gw_topology *t)
{
    gw_buf_puts(out, ",\"points\":[");
    for (size_t i = 0; i < ring_points_total(t->ring); i++) {
        struct ring_point p = ring_point_at(t->ring, i);
        gw_buf_field_u64(out, i ? ",{\"value\":" : "{\"value\":", p.value);
        gw_buf_puts(out, ",\"shard\":");
        gw_topology_shard_json(t, out, p.shard);
        gw_buf_field_u64(out, ",\"vnode\":", p.vnode);
        gw_buf_puts(out, "}");
    }
    gw_buf_puts(out, "]");
}

/* The ring object: id, algorithm, hash, vnodes (or table) and online shards as the topology
 * rendered them once, then its points (or slots) if asked for. */
void gw_ring_write(struct gw_buf *out, const struct gw_topology *t, int points)
{
    gw_buf_append(out, t->ring_json.data, t->ring_json.len);
    if (points && t->contract.algorithm != RING_KETAMA)
        write_slots(out, t);
    else if (points)
        write_points(out, t);
    gw_buf_puts(out, "}");
}

void gw_lookup_write(struct gw_buf *out, const struct gw_topology *t, const char *key,
                     size_t key_len, const struct ring_placement *p)
{
    gw_buf_puts(out, "{\"key\":");
    gw_buf_json_string(out, key, key_len);
    write_placement_tail(out, t, p);
}

/* A spilled placement (docs/contract.md §9): reason "spill", then its home shard. */
static void write_spilled_tail(struct gw_buf *out, const struct gw_topology *t,
                               const struct ring_placement *p, uint32_t home)
{
    write_placement_where(out, t, p);
    gw_buf_puts(out, ",\"reason\":\"spill\",\"home\":");
    gw_topology_shard_json(t, out, home);
    gw_buf_puts(out, "}");
}

static void write_placements(struct gw_buf *out, const struct gw_topology *t,
                             const struct gw_batch *b, const struct gw_dispatch *d)
{
    gw_buf_puts(out, ",\"placements\":[");
    for (size_t i = 0; i < b->count; i++) {
        const struct gw_change *c = &b->changes[i];
        gw_buf_puts(out, i ? ",{\"id\":" : "{\"id\":");
        gw_buf_json_string(out, c->id, c->id_len);
        gw_buf_puts(out, ",\"key\":");
        gw_buf_json_string(out, c->key, c->key_len);
        gw_buf_field_u64(out, ",\"size\":", c->size);
        if (d->home && d->home[i] != GW_SPILL_NO_HOME)
            write_spilled_tail(out, t, &d->placements[i], d->home[i]);
        else
            write_placement_tail(out, t, &d->placements[i]);
    }
    gw_buf_puts(out, "]");
}

static void write_shards(struct gw_buf *out, const struct gw_topology *t,
                         const struct gw_dispatch *d)
{
    gw_buf_puts(out, ",\"shards\":{");
    for (size_t i = 0; i < t->members.count; i++) {
        const struct gw_shard *s = &t->members.shards[i];
        if (i)
            gw_buf_puts(out, ",");
        gw_buf_json_string(out, s->id, s->id_len);
        gw_buf_puts(out, ":{\"state\":\"");
        gw_buf_puts(out, gw_state_name(s->state));
        gw_buf_field_u64(out, "\",\"weight\":", s->weight);
        gw_buf_field_u64(out, ",\"capacity\":", s->capacity);
        gw_buf_field_u64(out, ",\"load\":", d->tally[i].load);
        gw_buf_field_u64(out, ",\"received\":", d->tally[i].received);
        gw_buf_puts(out, gw_dispatch_over_capacity(t, d, i) ? ",\"over_capacity\":true}"
                                                            : ",\"over_capacity\":false}");
    }
    gw_buf_puts(out, "}");
}

/* What a receipt's bytes take when no string needs an escape: a placement's literals and
 * numbers (about 100 bytes) beside its id, key and shard; a shard's totals beside its id. One
 * allocation of that size replaces the doublings (and their copies) of a growing buffer
 * (docs/performance.md §19.5); an escape past it only grows the buffer. */
static size_t receipt_size_hint(const struct gw_topology *t, const struct gw_batch *b)
{
    size_t bytes = 256 + b->batch_id_len + t->ring_json.len;
    for (size_t i = 0; i < b->count; i++)
        bytes += b->changes[i].id_len + b->changes[i].key_len;
    for (size_t s = 0; s < t->members.count; s++)
        bytes += t->members.shards[s].id_len;
    return bytes + b->count * (112 + t->shard_json_max) + t->members.count * 112;
}

void gw_receipt_write(struct gw_buf *out, const struct gw_topology *t, const struct gw_batch *b,
                      const struct gw_dispatch *d)
{
    gw_buf_reserve(out, receipt_size_hint(t, b));
    gw_buf_puts(out, "{\"receipt_version\":2,\"batch_id\":");
    gw_buf_json_string(out, b->batch_id, b->batch_id_len);
    gw_buf_puts(out,
                ",\"epoch\":\""); /* the epoch the ring below belongs to (docs/contract.md §7) */
    gw_buf_puts(out, t->epoch);
    gw_buf_puts(out, "\",\"ring\":");
    gw_ring_write(out, t, 0);
    write_placements(out, t, b, d);
    write_shards(out, t, d);
    gw_buf_field_u64(out, ",\"capacity\":", t->capacity);
    gw_buf_field_u64(out, ",\"counts\":{\"changes\":", b->count);
    gw_buf_field_u64(out, ",\"dispatched\":", d->dispatched);
    gw_buf_field_u64(out, ",\"over_capacity_shards\":", d->over_capacity_shards);
    if (t->contract.policy == GW_POLICY_SPILL) /* docs/contract.md §9 rule 4 */
        gw_buf_field_u64(out, ",\"spilled\":", d->spilled);
    gw_buf_puts(out, d->ok ? "},\"ok\":true}" : "},\"ok\":false}");
}

int gw_receipt_names_batch(const char *receipt, size_t len, const char *id, size_t id_len)
{
    static const char head[] = "{\"receipt_version\":";
    static const char key[] = ",\"batch_id\":\"";
    const char *r = receipt, *end = receipt + len;
    if (len < sizeof(head) || memcmp(r, head, sizeof(head) - 1) != 0)
        return 0;
    r += sizeof(head) - 1;
    while (r < end && *r >= '0' && *r <= '9')
        r++;
    return (size_t)(end - r) >= sizeof(key) - 1 + id_len + 1 &&
           memcmp(r, key, sizeof(key) - 1) == 0 && memcmp(r + sizeof(key) - 1, id, id_len) == 0 &&
           r[sizeof(key) - 1 + id_len] == '"';
}
