/* The membership as JSON: the `shards` array of an epoch record (docs/journal.md §2) and of
 * GET /v1/admin/membership (docs/api.md §15). */
#include "membership.h"

void gw_membership_write(struct gw_buf *out, const struct gw_membership *m)
{
    gw_buf_puts(out, "[");
    for (size_t i = 0; i < m->count; i++) {
        const struct gw_shard *s = &m->shards[i];
        gw_buf_puts(out, i ? ",{\"id\":" : "{\"id\":");
        gw_buf_json_string(out, s->id, s->id_len);
        gw_buf_puts(out, ",\"state\":\"");
        gw_buf_puts(out, gw_state_name(s->state));
        gw_buf_field_u64(out, "\",\"capacity\":", s->capacity);
        gw_buf_field_u64(out, ",\"weight\":", s->weight);
        gw_buf_puts(out, "}");
    }
    gw_buf_puts(out, "]");
}
