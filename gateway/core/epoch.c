/* The epoch id (docs/contract.md §7): SHA-1 over the contract and every shard of the
 * membership, so a capacity or a state change names a new epoch even when the ring is the same. */
#include "epoch.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>

void gw_epoch_text(struct gw_buf *out, const struct gw_contract *c, const struct gw_membership *m)
{
    gw_buf_puts(out, "shardgate-epoch\nDISPATCH_HASH_RING=ketama\n");
    gw_buf_field_u64(out, "DISPATCH_VNODES=", c->vnodes);
    gw_buf_puts(out, "\nDISPATCH_RING_HASH=");
    gw_buf_puts(out, ring_digest_name(c->digest));
    gw_buf_puts(out, "\nDISPATCH_CAPACITY_POLICY=");
    gw_buf_puts(out, gw_policy_name(c->policy));
    gw_buf_puts(out, "\n");
    for (size_t i = 0; i < m->count; i++) { /* the membership is kept in bytewise id order */
        const struct gw_shard *s = &m->shards[i];
        gw_buf_append(out, s->id, s->id_len);
        gw_buf_puts(out, " ");
        gw_buf_puts(out, gw_state_name(s->state));
        gw_buf_field_u64(out, " ", s->capacity);
        gw_buf_field_u64(out, " ", s->weight);
        gw_buf_puts(out, "\n");
    }
}

int gw_epoch_id(const struct gw_contract *c, const struct gw_membership *m,
                char hex[GW_EPOCH_HEX_LEN + 1], struct gw_error *err)
{
    struct gw_buf text;
    unsigned char digest[EVP_MAX_MD_SIZE];
    gw_buf_init(&text);
    gw_epoch_text(&text, c, m);
    int ok = !text.failed && EVP_Digest(text.data, text.len, digest, NULL, EVP_sha1(), NULL);
    gw_buf_free(&text);
    if (!ok) {
        gw_error_set(err, "", "epoch id: out of memory");
        return -ENOMEM;
    }
    for (int i = 0; i < 20; i++)
        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    return 0;
}
