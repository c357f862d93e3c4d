/* The plan as JSON (docs/tools.md §1): one compact line, keys in a fixed order. */
#include <stdio.h>

#include "plan.h"

static void write_pairs(struct gw_buf *out, const struct gw_plan *p)
{
    gw_buf_puts(out, ",\"pairs\":[");
    for (size_t i = 0; i < p->pair_count; i++) {
        const struct gw_plan_pair *e = &p->pairs[i];
        gw_buf_puts(out, i ? ",{\"from\":" : "{\"from\":");
        gw_buf_json_string(out, p->shards[e->from].id, p->shards[e->from].id_len);
        gw_buf_puts(out, ",\"to\":");
        gw_buf_json_string(out, p->shards[e->to].id, p->shards[e->to].id_len);
        gw_buf_field_u64(out, ",\"moved_points\":", e->moved_points);
        gw_buf_puts(out, "}");
    }
    gw_buf_puts(out, "]");
}

static void write_shards(struct gw_buf *out, const struct gw_plan *p)
{
    gw_buf_puts(out, ",\"shards\":[");
    for (size_t i = 0; i < p->shard_count; i++) {
        const struct gw_plan_shard *s = &p->shards[i];
        gw_buf_puts(out, i ? ",{\"id\":" : "{\"id\":");
        gw_buf_json_string(out, s->id, s->id_len);
        gw_buf_field_u64(out, ",\"before\":", s->before);
        gw_buf_field_u64(out, ",\"after\":", s->after);
        gw_buf_puts(out, "}");
    }
    gw_buf_puts(out, "]");
}

static void write_names(struct gw_buf *out, const struct gw_plan *p)
{
    gw_buf_puts(out, "{\"from_epoch\":\"");
    gw_buf_puts(out, p->from_epoch);
    gw_buf_puts(out, "\",\"to_epoch\":\"");
    gw_buf_puts(out, p->to_epoch);
    gw_buf_puts(out, "\",\"from_ring\":\"");
    gw_buf_puts(out, p->from_ring);
    gw_buf_puts(out, "\",\"to_ring\":\"");
    gw_buf_puts(out, p->to_ring);
    gw_buf_puts(out, "\"");
}

static void write_ranges(struct gw_buf *out, const struct gw_plan *p)
{
    gw_buf_puts(out, ",\"ranges\":[");
    for (size_t i = 0; i < p->range_count; i++) {
        const struct gw_plan_range *r = &p->ranges[i];
        gw_buf_field_u64(out, i ? ",{\"lo\":" : "{\"lo\":", r->lo);
        gw_buf_field_u64(out, ",\"hi\":", r->hi);
        gw_buf_puts(out, ",\"from\":");
        gw_buf_json_string(out, p->shards[r->from].id, p->shards[r->from].id_len);
        gw_buf_puts(out, ",\"to\":");
        gw_buf_json_string(out, p->shards[r->to].id, p->shards[r->to].id_len);
        gw_buf_puts(out, "}");
    }
    gw_buf_puts(out, "]");
}

void gw_plan_write(struct gw_buf *out, const struct gw_plan *p)
{
    char fraction[32];
    write_names(out, p);
    if (p->space != GW_PLAN_HASH_SPACE) /* a Maglev plan counts slots (docs/contract.md §11) */
        gw_buf_field_u64(out, ",\"slots\":", p->space);
    gw_buf_field_u64(out, ",\"moved_points\":", p->moved_points);
    /* %.9f of an exact double (moved_points / 2^32): the bytes Python's "%.9f" gives too. */
    snprintf(fraction, sizeof(fraction), "%.9f", gw_plan_fraction(p));
    gw_buf_puts(out, ",\"moved_fraction\":");
    gw_buf_puts(out, fraction);
    gw_buf_field_u64(out, ",\"minimum_points\":", p->minimum_points);
    snprintf(fraction, sizeof(fraction), "%.9f", gw_plan_minimum_fraction(p));
    gw_buf_puts(out, ",\"minimum_fraction\":");
    gw_buf_puts(out, fraction);
    write_pairs(out, p);
    write_shards(out, p);
    if (p->has_ranges)
        write_ranges(out, p);
    if (p->has_journal) {
        gw_buf_field_u64(out, ",\"journal\":{\"changes\":", p->changes);
        gw_buf_field_u64(out, ",\"moved_changes\":", p->moved_changes);
        gw_buf_field_u128(out, ",\"moved_load\":", p->moved_load);
        if (p->counts_spills)
            gw_buf_field_u64(out, ",\"spilled\":", p->spilled);
        gw_buf_puts(out, "}");
    }
    gw_buf_puts(out, "}");
}
