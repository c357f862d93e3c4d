/* The epoch id (docs/contract.md §7): SHA-1 over the contract and every shard of the
 * membership, so a capacity or a state change names a new epoch even when the ring is the same. */
#include "epoch.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>

void gw_epoch_text(struct gw_buf *out, const struct gw_contract *c, const struct gw_membership *m)
{
    gw_buf_puts(out, "shardgate-epoch\nDISPATCH_HASH_RING=");
    gw_buf_puts(out, ring_algorithm_name(c->algorithm));
    gw_buf_puts(out, "\n");
    gw_buf_puts(out, gw_contract_size_key(c));
    gw_buf_field_u64(out, "=", gw_contract_size(c));
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

/* The ring id's bytes: "<algorithm>\n<hash>\n<vnodes or table size>\n", then "<id> <weight>\n"
 * per online shard in id order (ring/ring.c). */
static void ring_id_text(struct gw_buf *out, const struct gw_contract *c,
                         const struct gw_membership *m)
{
    gw_buf_puts(out, ring_algorithm_name(c->algorithm));
    gw_buf_puts(out, "\n");
    gw_buf_puts(out, ring_digest_name(c->digest));
    gw_buf_field_u64(out, "\n", gw_contract_size(c));
    gw_buf_puts(out, "\n");
    for (size_t i = 0; i < m->count; i++) {
        const struct gw_shard *s = &m->shards[i];
        if (s->state != GW_STATE_ONLINE)
            continue;
        gw_buf_append(out, s->id, s->id_len);
        gw_buf_field_u64(out, " ", s->weight);
        gw_buf_puts(out, "\n");
    }
}

static int sha1_hex(const struct gw_buf *text, char hex[GW_EPOCH_HEX_LEN + 1], struct gw_error *err)
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    int ok = !text->failed && EVP_Digest(text->data, text->len, digest, NULL, EVP_sha1(), NULL);
    if (!ok) {
        gw_error_set(err, "", "epoch id: out of memory");
        return -ENOMEM;
    }
    for (int i = 0; i < 20; i++)
        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    return 0;
}

int gw_epoch_ring_id(const struct gw_contract *c, const struct gw_membership *m,
                     char hex[GW_EPOCH_HEX_LEN + 1], struct gw_error *err)
{
    struct gw_buf text;
    gw_buf_init(&text);
    ring_id_text(&text, c, m);
    int rc = sha1_hex(&text, hex, err);
    gw_buf_free(&text);
    return rc;
}

int gw_epoch_id(const struct gw_contract *c, const struct gw_membership *m,
                char hex[GW_EPOCH_HEX_LEN + 1], struct gw_error *err)
{
    struct gw_buf text;
    gw_buf_init(&text);
    gw_epoch_text(&text, c, m);
    int rc = sha1_hex(&text, hex, err);
    gw_buf_free(&text);
    return rc;
}
