/* Canonical journal bytes: rebuilds each record piece by piece, comparing as it goes. */
/* No copy of the line is made: a receipt costs one pass over its bytes. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "canon.h"

struct hc_canon {
    const char *p;
    size_t n, at;
    long diff; /* first differing offset, -1 while equal */
};

static void hc_put(struct hc_canon *c, const char *s, size_t n)
{
    if (c->diff >= 0)
        return;
    size_t i = 0;
    while (i < n && c->at + i < c->n && c->p[c->at + i] == s[i])
        i++;
    if (i < n)
        c->diff = (long)(c->at + i);
    c->at += n;
}

static void hc_puts(struct hc_canon *c, const char *s)
{
    hc_put(c, s, strlen(s));
}

static void hc_put_int(struct hc_canon *c, const char *before, int64_t v)
{
    char num[24];
    hc_puts(c, before);
    int n = snprintf(num, sizeof num, "%" PRId64, v);
    hc_put(c, num, (size_t)n);
}

/* A JSON string as the gateway escapes it: '"' '\' and bytes below 0x20 (short forms where
 * JSON has one, else \u00xx in lowercase hex); every other byte raw. */
static void hc_put_str(struct hc_canon *c, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    hc_put(c, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n && c->diff < 0; i++) {
        unsigned char b = (unsigned char)s[i];
        if (b >= 0x20 && b != '"' && b != '\\')
            continue;
        hc_put(c, s + run, i - run);
        run = i + 1;
        const char *brief = b == '"'    ? "\\\""
                            : b == '\\' ? "\\\\"
                            : b == '\b' ? "\\b"
                            : b == '\f' ? "\\f"
                            : b == '\n' ? "\\n"
                            : b == '\r' ? "\\r"
                            : b == '\t' ? "\\t"
                                        : NULL;
        char esc[6] = {'\\', 'u', '0', '0', hex[b >> 4], hex[b & 15]};
        if (brief != NULL)
            hc_puts(c, brief);
        else
            hc_put(c, esc, sizeof esc);
    }
    hc_put(c, s + run, n - run);
    hc_put(c, "\"", 1);
}

static void hc_put_hstr(struct hc_canon *c, struct hc_str s)
{
    hc_put_str(c, s.p, s.n);
}

static void hc_put_ring(struct hc_canon *c, const struct hc_receipt *r)
{
    hc_puts(c, ",\"ring\":{\"id\":");
    hc_put_hstr(c, r->ring_id);
    hc_puts(c, ",\"algorithm\":");
    hc_put_hstr(c, r->algorithm);
    hc_puts(c, ",\"hash\":");
    hc_put_hstr(c, r->hash);
    if (r->table_form) {
        hc_put_int(c, ",\"table\":", r->table);
    } else {
        hc_put_int(c, ",\"vnodes\":", r->vnodes);
        hc_put_int(c, ",\"vnodes_total\":", r->vnodes_total);
    }
    hc_puts(c, ",\"online\":[");
    for (size_t i = 0; i < r->n_online; i++) {
        if (i)
            hc_put(c, ",", 1);
        hc_put_hstr(c, r->online[i]);
    }
    hc_puts(c, "]}");
}

static void hc_put_placements(struct hc_canon *c, const struct hc_receipt *r)
{
    hc_puts(c, ",\"placements\":[");
    for (size_t i = 0; i < r->n_pl && c->diff < 0; i++) {
        const struct hc_rplacement *p = &r->pl[i];
        hc_puts(c, i ? ",{\"id\":" : "{\"id\":");
        hc_put_hstr(c, p->id);
        hc_puts(c, ",\"key\":");
        hc_put_hstr(c, p->key);
        hc_put_int(c, ",\"size\":", p->size);
        if (r->table_form) {
            hc_put_int(c, ",\"slot\":", p->point);
        } else {
            hc_put_int(c, ",\"hash\":", p->hash);
            hc_put_int(c, ",\"point\":", p->point);
            hc_put_int(c, ",\"vnode\":", p->vnode);
        }
        hc_puts(c, ",\"shard\":");
        hc_put_hstr(c, p->shard);
        hc_puts(c, ",\"reason\":");
        hc_put_hstr(c, p->reason);
        if (p->home.p != NULL) {
            hc_puts(c, ",\"home\":");
            hc_put_hstr(c, p->home);
        }
        hc_puts(c, "}");
    }
    hc_puts(c, "]");
}

static void hc_put_shards(struct hc_canon *c, const struct hc_receipt *r)
{
    hc_puts(c, ",\"shards\":{");
    for (size_t i = 0; i < r->n_sh; i++) {
        const struct hc_rshard *s = &r->sh[i];
        if (i)
            hc_put(c, ",", 1);
        hc_put_hstr(c, s->id);
        hc_puts(c, ":{\"state\":");
        hc_put_hstr(c, s->state);
        hc_put_int(c, ",\"weight\":", s->weight);
        hc_put_int(c, ",\"capacity\":", s->capacity);
        hc_put_int(c, ",\"load\":", s->load);
        hc_put_int(c, ",\"received\":", s->received);
        hc_puts(c, s->over_capacity ? ",\"over_capacity\":true}" : ",\"over_capacity\":false}");
    }
    hc_puts(c, "}");
}

/* The end: the line must stop exactly where the canonical form does. */
static long hc_canon_end(struct hc_canon *c)
{
    if (c->diff < 0 && c->at != c->n)
        c->diff = (long)(c->at < c->n ? c->at : c->n);
    return c->diff;
}

long hc_canon_receipt_record(const struct hc_record *rec, const struct hc_receipt *r)
{
    struct hc_canon c = {rec->raw.p, rec->raw.n, 0, -1};
    hc_put_int(&c, "{\"type\":\"receipt\",\"seq\":", rec->seq);
    hc_puts(&c, ",\"fingerprint\":");
    hc_put_hstr(&c, rec->fingerprint);
    hc_put_int(&c, ",\"receipt\":{\"receipt_version\":", r->version);
    hc_puts(&c, ",\"batch_id\":");
    hc_put_hstr(&c, r->batch_id);
    if (r->epoch.p != NULL) {
        hc_puts(&c, ",\"epoch\":");
        hc_put_hstr(&c, r->epoch);
    }
    hc_put_ring(&c, r);
    hc_put_placements(&c, r);
    hc_put_shards(&c, r);
    hc_put_int(&c, ",\"capacity\":", r->capacity);
    hc_put_int(&c, ",\"counts\":{\"changes\":", r->changes);
    hc_put_int(&c, ",\"dispatched\":", r->dispatched);
    hc_put_int(&c, ",\"over_capacity_shards\":", r->over_capacity_shards);
    if (r->has_spilled)
        hc_put_int(&c, ",\"spilled\":", r->spilled);
    hc_puts(&c, r->ok ? "},\"ok\":true}}" : "},\"ok\":false}}");
    return hc_canon_end(&c);
}

/* The chain keys of a new-form epoch record, between "type" and "ring_id". */
static void hc_put_chain(struct hc_canon *c, const struct hc_epoch_chain *ch)
{
    hc_puts(c, ",\"epoch\":");
    hc_put_str(c, ch->epoch, strlen(ch->epoch));
    hc_put_int(c, ",\"epoch_seq\":", ch->epoch_seq);
    hc_puts(c, ",\"prev\":");
    if (ch->prev_null)
        hc_puts(c, "null");
    else
        hc_put_str(c, ch->prev, strlen(ch->prev));
    hc_puts(c, ",\"source\":");
    hc_put_str(c, ch->source, strlen(ch->source));
    hc_puts(c, ",\"time\":");
    hc_put_str(c, ch->time, strlen(ch->time));
    hc_put_int(c, ",\"first_seq\":", ch->first_seq);
}

long hc_canon_epoch_record(const struct hc_epoch *ep, struct hc_str line)
{
    struct hc_canon c = {line.p, line.n, 0, -1};
    const struct hc_contract *k = &ep->contract;
    hc_puts(&c, "{\"type\":\"epoch\"");
    if (!ep->chain.legacy)
        hc_put_chain(&c, &ep->chain);
    hc_puts(&c, ",\"ring_id\":");
    hc_put_str(&c, ep->recorded_id, strlen(ep->recorded_id));
    hc_puts(&c, ",\"contract\":{\"DISPATCH_HASH_RING\":");
    hc_put_str(&c, hc_ring_name(k->ring), strlen(hc_ring_name(k->ring)));
    hc_puts(&c, ",");
    hc_put_str(&c, hc_size_key(k), strlen(hc_size_key(k)));
    hc_put_int(&c, ":", (int64_t)hc_size(k));
    hc_puts(&c, ",\"DISPATCH_RING_HASH\":");
    hc_put_str(&c, hc_hash_name(k->hash), strlen(hc_hash_name(k->hash)));
    hc_puts(&c, ",\"DISPATCH_CAPACITY_POLICY\":");
    hc_put_str(&c, hc_policy_name(k->policy), strlen(hc_policy_name(k->policy)));
    hc_puts(&c, "},\"shards\":[");
    for (size_t i = 0; i < ep->members.n; i++) {
        const struct hc_shard *s = &ep->members.shards[i];
        hc_puts(&c, i ? ",{\"id\":" : "{\"id\":");
        hc_put_str(&c, s->id, s->id_len);
        hc_puts(&c, ",\"state\":");
        hc_puts(&c, s->state == HC_STATE_ONLINE     ? "\"online\""
                    : s->state == HC_STATE_DRAINING ? "\"draining\""
                                                    : "\"offline\"");
        hc_put_int(&c, ",\"capacity\":", s->capacity);
        hc_put_int(&c, ",\"weight\":", (int64_t)s->weight);
        hc_puts(&c, "}");
    }
    hc_puts(&c, "]}");
    return hc_canon_end(&c);
}
