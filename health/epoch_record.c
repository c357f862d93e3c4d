/* Epoch record decoder: which form, its chain fields, its ring id, contract and membership. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "epoch_record.h"

#define HC_SAFE_SEQ_MAX 9007199254740991LL /* 2^53-1 */

static const char *const hc_legacy_keys[] = {"type", "ring_id", "contract", "shards"};
static const char *const hc_chain_keys[] = {"type", "epoch",     "epoch_seq", "prev",     "source",
                                            "time", "first_seq", "ring_id",   "contract", "shards"};

#define HC_N(a) (sizeof(a) / sizeof((a)[0]))

static int hc_is_hex40(const json_t *v)
{
    const char *s = json_string_value(v);
    return s != NULL && json_string_length(v) == 40 && strspn(s, "0123456789abcdef") == 40;
}

/* Every key of rec is one of keys[0..n-1] and every one of those is present. */
static int hc_record_keys(const json_t *rec, const char *const *keys, size_t n, struct hc_err *err)
{
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)rec, key, val)
    {
        size_t i = 0;
        while (i < n && strcmp(key, keys[i]) != 0)
            i++;
        if (i == n)
            return hc_err_set(err, -EINVAL, "%s: unknown key", key);
    }
    for (size_t i = 0; i < n; i++)
        if (json_object_get(rec, keys[i]) == NULL)
            return hc_err_set(err, -EINVAL, "%s: missing", keys[i]);
    return 0;
}

/* YYYY-MM-DDTHH:MM:SS.mmmZ, digits where digits go. */
static int hc_time_valid(const char *s)
{
    static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddZ";
    if (s == NULL || strlen(s) != sizeof shape - 1)
        return 0;
    for (size_t i = 0; i < sizeof shape - 1; i++) {
        if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i])
            return 0;
    }
    return 1;
}

static int hc_seq_field(const json_t *rec, const char *key, int64_t *out, struct hc_err *err)
{
    const json_t *v = json_object_get(rec, key);
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > HC_SAFE_SEQ_MAX)
        return hc_err_set(err, -EINVAL, "%s: must be an integer 1..9007199254740991", key);
    *out = json_integer_value(v);
    return 0;
}

/* The chain keys of a new-form record (docs/journal.md §2). */
static int hc_chain_decode(const json_t *rec, struct hc_epoch_chain *ch, struct hc_err *err)
{
    const json_t *epoch = json_object_get(rec, "epoch"), *prev = json_object_get(rec, "prev");
    const char *source = json_string_value(json_object_get(rec, "source"));
    const char *time = json_string_value(json_object_get(rec, "time"));
    if (!hc_is_hex40(epoch))
        return hc_err_set(err, -EINVAL, "epoch: must be 40 lowercase hex digits");
    snprintf(ch->epoch, sizeof ch->epoch, "%s", json_string_value(epoch));
    int rc = hc_seq_field(rec, "epoch_seq", &ch->epoch_seq, err);
    if (rc != 0)
        return rc;
    ch->prev_null = json_is_null(prev);
    if (!ch->prev_null && !hc_is_hex40(prev))
        return hc_err_set(err, -EINVAL, "prev: must be null or 40 lowercase hex digits");
    if (!ch->prev_null)
        snprintf(ch->prev, sizeof ch->prev, "%s", json_string_value(prev));
    if (source == NULL || (strcmp(source, "start") != 0 && strcmp(source, "sighup") != 0 &&
                           strcmp(source, "admin") != 0))
        return hc_err_set(err, -EINVAL, "source: must be one of start, sighup, admin");
    snprintf(ch->source, sizeof ch->source, "%s", source);
    if (!hc_time_valid(time))
        return hc_err_set(err, -EINVAL, "time: must be UTC as YYYY-MM-DDTHH:MM:SS.mmmZ");
    snprintf(ch->time, sizeof ch->time, "%s", time);
    return hc_seq_field(rec, "first_seq", &ch->first_seq, err);
}

int hc_epoch_record_decode(const json_t *rec, long line, struct hc_epoch *ep, struct hc_err *err)
{
    struct hc_epoch_chain *ch = &ep->chain;
    ch->legacy = json_object_get(rec, "epoch") == NULL;
    int rc = ch->legacy ? hc_record_keys(rec, hc_legacy_keys, HC_N(hc_legacy_keys), err)
                        : hc_record_keys(rec, hc_chain_keys, HC_N(hc_chain_keys), err);
    if (rc == 0 && !ch->legacy)
        rc = hc_chain_decode(rec, ch, err);
    if (rc != 0)
        return rc;
    const json_t *id = json_object_get(rec, "ring_id");
    if (!hc_is_hex40(id))
        return hc_err_set(err, -EINVAL, "ring_id: must be 40 lowercase hex digits");
    snprintf(ep->recorded_id, sizeof ep->recorded_id, "%s", json_string_value(id));
    struct hc_contract c;
    struct hc_membership m;
    rc = hc_contract_from_json(json_object_get(rec, "contract"), &c, err);
    if (rc == 0)
        rc = hc_membership_from_json(json_object_get(rec, "shards"), "shards", &c, &m, err);
    if (rc != 0)
        return rc;
    rc = hc_epoch_make(ep, &c, &m, line, err);
    if (rc == 0 && ch->legacy) /* the implicit epoch id (docs/journal.md §2) */
        memcpy(ch->epoch, ep->epoch_id, sizeof ch->epoch);
    /* hc_epoch_make fails only on a digest or memory failure: never a decoding issue */
    return rc == -EINVAL ? hc_err_set(err, -EIO, "SHA-1 unavailable") : rc;
}
