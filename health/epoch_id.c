/* Epoch id: SHA-1 of "shardgate-epoch\n", the four contract lines, then one line per shard. */
#include <inttypes.h>
#include <stdio.h>

#include "digest.h"
#include "epoch_id.h"

int hc_epoch_id(const struct hc_contract *c, const struct hc_membership *m, char id[41],
                struct hc_err *err)
{
    struct hc_digest *d;
    int rc = hc_digest_open("SHA1", &d, err);
    if (rc != 0)
        return rc;
    char line[160];
    int len = snprintf(line, sizeof line,
                       "shardgate-epoch\nDISPATCH_HASH_RING=%s\n%s=%u\n"
                       "DISPATCH_RING_HASH=%s\nDISPATCH_CAPACITY_POLICY=%s\n",
                       hc_ring_name(c->ring), hc_size_key(c), hc_size(c), hc_hash_name(c->hash),
                       hc_policy_name(c->policy));
    rc = hc_digest_begin(d);
    rc = rc ? rc : hc_digest_update(d, line, (size_t)len);
    /* The membership is sorted by id (membership.h), so index order is bytewise id order. */
    for (size_t i = 0; rc == 0 && i < m->n; i++) {
        const struct hc_shard *s = &m->shards[i];
        len = snprintf(line, sizeof line, "%s %s %" PRId64 " %u\n", s->id, hc_state_name(s->state),
                       s->capacity, s->weight);
        rc = hc_digest_update(d, line, (size_t)len);
    }
    unsigned char out[HC_DIGEST_MAX];
    rc = rc ? rc : hc_digest_end(d, out);
    hc_digest_close(d);
    if (rc != 0)
        return hc_err_set(err, rc, "SHA-1 failed");
    hc_hex(out, 20, id);
    return 0;
}
