/* The record lines of docs/journal.md §2 (docs/contract.md §7): an epoch record's new form, and
 * the replay of both forms: every id recomputed, every link of the chain checked; a receipt
 * record's first bytes. */
#include "records.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int bad(struct gw_error *err, const char *fmt, const char *arg)
{
    gw_error_set(err, "", fmt, arg);
    return -EINVAL;
}

void gw_records_epoch_line(struct gw_buf *out, const struct gw_contract *c,
                           const struct gw_membership *m, const struct gw_epoch_entry *e)
{
    gw_buf_puts(out, "{\"type\":\"epoch\",\"epoch\":\"");
    gw_buf_puts(out, e->epoch);
    gw_buf_puts(out, "\"");
    gw_chain_write_links(out, e);
    gw_buf_puts(out, ",\"ring_id\":\"");
    gw_buf_puts(out, e->ring_id);
    gw_buf_puts(out, "\",\"contract\":{\"DISPATCH_HASH_RING\":\"");
    gw_buf_puts(out, ring_algorithm_name(c->algorithm));
    gw_buf_puts(out, "\",\"");
    gw_buf_puts(out, gw_contract_size_key(c));
    gw_buf_field_u64(out, "\":", gw_contract_size(c));
    gw_buf_puts(out, ",\"DISPATCH_RING_HASH\":\"");
    gw_buf_puts(out, ring_digest_name(c->digest));
    gw_buf_puts(out, "\",\"DISPATCH_CAPACITY_POLICY\":\"");
    gw_buf_puts(out, gw_policy_name(c->policy));
    gw_buf_puts(out, "\"},\"shards\":");
    gw_membership_write(out, m);
    gw_buf_puts(out, "}");
}

/* The key that sizes each algorithm's ring and its bounds (docs/contract.md §1). */
struct size_key {
    const char *algorithm, *key;
    long long lo, hi;
};

static const struct size_key size_keys[] = {
    {"ketama", "DISPATCH_VNODES", 1, RING_VNODES_MAX},
    {"maglev", "DISPATCH_MAGLEV_TABLE", 2, RING_MAGLEV_TABLE_MAX},
    {"jump", "DISPATCH_JUMP_SLOTS", 1, RING_JUMP_SLOTS_MAX},
};

/* The record's contract object, read by the contract file's own parser (same rules, same
 * messages): each of the four keys becomes a KEY=VALUE line. The second sizes the ring:
 * DISPATCH_VNODES, DISPATCH_MAGLEV_TABLE or DISPATCH_JUMP_SLOTS (docs/contract.md §1); an
 * unknown algorithm is read as ketama's, for the parser to name. */
static int contract_from_json(json_t *obj, struct gw_contract *out, struct gw_error *err)
{
    const char *ring = json_string_value(json_object_get(obj, "DISPATCH_HASH_RING"));
    const struct size_key *sk = &size_keys[0];
    for (size_t i = 1; ring && i < sizeof(size_keys) / sizeof(size_keys[0]); i++)
        if (strcmp(ring, size_keys[i].algorithm) == 0)
            sk = &size_keys[i];
    const char *const keys[] = {"DISPATCH_HASH_RING", sk->key, "DISPATCH_RING_HASH",
                                "DISPATCH_CAPACITY_POLICY"};
    char text[512];
    size_t n = 0;
    json_t *size = json_object_get(obj, keys[1]);
    if (!json_is_integer(size) || json_integer_value(size) < sk->lo ||
        json_integer_value(size) > sk->hi) {
        gw_error_set(err, "", "epoch record: contract.%s must be an integer %lld..%lld", keys[1],
                     sk->lo, sk->hi);
        return -EINVAL;
    }
    if (json_object_size(obj) != 4)
        return bad(err, "epoch record: contract must hold exactly the four keys of %s",
                   "docs/contract.md §1");
    for (int i = 0; i < 4; i++) {
        json_t *v = json_object_get(obj, keys[i]);
        if (json_is_string(v) && json_string_length(v) < 64 &&
            !memchr(json_string_value(v), '\n', json_string_length(v)))
            n += (size_t)snprintf(text + n, sizeof(text) - n, "%s=%s\n", keys[i],
                                  json_string_value(v));
        else if (json_is_integer(v))
            n += (size_t)snprintf(text + n, sizeof(text) - n, "%s=%lld\n", keys[i],
                                  (long long)json_integer_value(v));
        else
            return bad(err, "epoch record: contract.%s must be a string or an integer", keys[i]);
    }
    return gw_contract_parse(text, n, "epoch record", out, err);
}

int gw_epoch_record_read(json_t *root, struct gw_contract *c, struct gw_membership *m,
                         struct gw_epoch_entry *e, struct gw_error *err)
{
    json_t *contract = json_object_get(root, "contract"), *shards = json_object_get(root, "shards");
    if (!json_is_object(contract) || !json_is_array(shards))
        return bad(err, "epoch record: needs a contract object and a shards array%s", "");
    int rc = contract_from_json(contract, c, err);
    if (rc == 0)
        rc = gw_membership_from_json(shards, "epoch record", m, err);
    if (rc != 0)
        return rc;
    rc = gw_membership_check_ring(m, c, "epoch record", err);
    if (rc == 0)
        rc = gw_epoch_id(c, m, e->epoch, err);
    if (rc == 0)
        rc = gw_epoch_ring_id(c, m, e->ring_id, err);
    if (rc != 0)
        gw_membership_free(m);
    return rc;
}

static int is_time(const char *s)
{
    static const char form[] = "dddd-dd-ddTdd:dd:dd.dddZ";
    for (size_t i = 0; i < sizeof(form); i++)
        if (form[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != form[i])
            return 0;
    return 1;
}

/* The links of a new-form record against the chain's expectation in *e; fills source and time. */
static int check_links(json_t *root, struct gw_epoch_entry *e, struct gw_error *err)
{
    char want[80];
    json_t *seq = json_object_get(root, "epoch_seq"), *prev = json_object_get(root, "prev");
    json_t *first = json_object_get(root, "first_seq");
    const char *source = json_string_value(json_object_get(root, "source"));
    const char *time = json_string_value(json_object_get(root, "time"));
    if (!json_is_integer(seq) || (uint64_t)json_integer_value(seq) != e->epoch_seq) {
        snprintf(want, sizeof(want), "%llu", (unsigned long long)e->epoch_seq);
        return bad(err, "epoch record: epoch_seq must be %s", want);
    }
    if (e->prev[0] ? !json_is_string(prev) || strcmp(json_string_value(prev), e->prev) != 0
                   : !json_is_null(prev))
        return bad(err, "epoch record: prev must be %s (the previous epoch)",
                   e->prev[0] ? e->prev : "null");
    if (!source || gw_source_parse(source, &e->source) != 0)
        return bad(err, "epoch record: source must be %s", "start, sighup or admin");
    if (!time || strlen(time) != GW_EPOCH_TIME_LEN || !is_time(time))
        return bad(err, "epoch record: time must be %s", "YYYY-MM-DDTHH:MM:SS.mmmZ");
    memcpy(e->time, time, GW_EPOCH_TIME_LEN + 1);
    if (!json_is_integer(first) || (uint64_t)json_integer_value(first) != e->first_seq) {
        snprintf(want, sizeof(want), "%llu", (unsigned long long)e->first_seq);
        return bad(err, "epoch record: first_seq must be %s", want);
    }
    return 0;
}

/* A new-form record: its recorded ids, its links, then its bytes rebuilt exactly. */
static int check_new_form(json_t *root, const char *line, size_t len, const struct gw_contract *c,
                          const struct gw_membership *m, struct gw_epoch_entry *e,
                          struct gw_error *err)
{
    const char *epoch = json_string_value(json_object_get(root, "epoch"));
    if (!epoch || strcmp(epoch, e->epoch) != 0)
        return bad(err, "epoch record: epoch must be %s (recomputed from contract and shards)",
                   e->epoch);
    int rc = check_links(root, e, err);
    if (rc != 0)
        return rc;
    struct gw_buf again;
    gw_buf_init(&again);
    gw_records_epoch_line(&again, c, m, e);
    rc = again.failed ? -ENOMEM : 0;
    if (rc == 0 && (again.len != len || memcmp(again.data, line, len) != 0))
        rc = bad(err, "epoch record: not in the canonical form of %s", "docs/journal.md §2");
    gw_buf_free(&again);
    if (rc == -ENOMEM)
        gw_error_set(err, "", "journal: out of memory");
    return rc;
}

int gw_epoch_record_replay(json_t *root, const char *line, size_t len, struct gw_epoch_chain *chain,
                           uint64_t last_seq, struct gw_epoch_entry *entry,
                           struct gw_membership *members, struct gw_contract *contract,
                           struct gw_error *err)
{
    json_t *ring = json_object_get(root, "ring_id");
    int legacy = json_object_get(root, "epoch") == NULL;
    if (!json_is_string(ring))
        return bad(err, "epoch record: ring_id must be 40 lowercase hex digits%s", "");
    if (legacy && json_object_size(root) != 4)
        return bad(err, "epoch record: a legacy record holds exactly %s",
                   "type, ring_id, contract and shards");
    struct gw_contract c;
    struct gw_epoch_entry e;
    int rc = gw_epoch_record_read(root, &c, members, &e, err);
    if (rc != 0)
        return rc;
    gw_chain_next(chain, e.epoch, e.ring_id, entry);
    entry->first_seq = last_seq + 1;
    if (strcmp(json_string_value(ring), e.ring_id) != 0)
        rc = bad(err, "epoch record: ring_id must be %s (recomputed)", e.ring_id);
    else if (strcmp(entry->prev, e.epoch) == 0)
        rc = bad(err, "epoch record: epoch %s equals the previous epoch", e.epoch);
    else if (!legacy)
        rc = check_new_form(root, line, len, &c, members, entry, err);
    if (rc != 0)
        gw_membership_free(members);
    else if (contract)
        *contract = c;
    return rc;
}

int gw_epoch_receipt_link(struct gw_epoch_chain *chain, json_t *receipt, uint64_t *epoch_seq,
                          struct gw_error *err)
{
    json_t *ring = json_object_get(json_object_get(receipt, "ring"), "id");
    json_t *epoch = json_object_get(receipt, "epoch");
    json_t *version = json_object_get(receipt, "receipt_version");
    struct gw_epoch_entry e;
    char number[24];
    json_int_t v = json_is_integer(version) ? json_integer_value(version) : 0;
    snprintf(number, sizeof(number), "%lld", (long long)v);
    if (v > 2) /* a newer shardgate's receipt: never read as one of ours (docs/journal.md §5) */
        return bad(err,
                   "receipt record: receipt_version %s is newer than this shardgate's (2): run the "
                   "version that wrote it, or a newer one",
                   number);
    if (v < 1)
        return bad(err, "receipt record: receipt_version must be 1 or 2%s", "");
    if (!json_is_string(ring))
        return bad(err, "receipt record: its ring id matches no earlier epoch record%s", "");
    if (!epoch && json_is_integer(version) && json_integer_value(version) == 2)
        return bad(err, "receipt record: a version 2 receipt needs an epoch%s", "");
    if (!epoch) { /* version 1: the ring alone */
        if (!gw_chain_find(chain, json_string_value(ring), 1, &e))
            return bad(err, "receipt record: its ring id matches no earlier epoch record%s", "");
        *epoch_seq = e.epoch_seq;
        return 0;
    }
    if (!json_is_string(epoch) || !gw_chain_find(chain, json_string_value(epoch), 0, &e))
        return bad(err, "receipt record: its epoch matches no earlier epoch record%s", "");
    if (strcmp(e.ring_id, json_string_value(ring)) != 0)
        return bad(err, "receipt record: its ring id is not that of its epoch %s", e.epoch);
    *epoch_seq = e.epoch_seq;
    return 0;
}

void gw_records_receipt_prefix(struct gw_buf *out, uint64_t seq,
                               const unsigned char fingerprint[GW_FINGERPRINT_LEN])
{
    gw_buf_field_u64(out, "{\"type\":\"receipt\",\"seq\":", seq);
    gw_buf_puts(out, ",\"fingerprint\":\"");
    gw_buf_hex(out, fingerprint, GW_FINGERPRINT_LEN);
    gw_buf_puts(out, "\",\"receipt\":");
}
