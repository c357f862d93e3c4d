/* The request path of the idempotency index: claims in RAM, durable entries in the database
 * (docs/decisions.md §15). The lock is held for the claims only; the database is read outside
 * it and a commit meanwhile sends the lookup round again. */
#include "idempotency.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crashpoint.h"
#include "idem_state.h"

enum found { FOUND_NONE, FOUND_IN_FLIGHT, FOUND_DURABLE, FOUND_BAD_BLOCK };

/* Looks `key` up among the claims, then in the database. Returns FOUND_NONE with the lock HELD
 * (so that the caller adds the key before anyone else can), else unlocked; FOUND_BAD_BLOCK when
 * the database failed, now or at an earlier commit (whether the id is known cannot be said). A
 * claim that became durable between the database read and the lock sends the lookup round
 * again. */
static enum found lookup_keep_lock_if_none(struct gw_idem_state *s, struct gw_idem_key key,
                                           struct gw_idem_rec *out)
{
    for (;;) {
        pthread_mutex_lock(&s->lock);
        if (s->broken) {
            pthread_mutex_unlock(&s->lock);
            return FOUND_BAD_BLOCK;
        }
        if (gw_idem_table_find(&s->inflight, key)) {
            pthread_mutex_unlock(&s->lock);
            return FOUND_IN_FLIGHT;
        }
        uint64_t commits = s->commits;
        pthread_mutex_unlock(&s->lock);
        int rc = gw_idem_db_get(s->db, key, out);
        if (s->tune.after_read)
            s->tune.after_read(s->tune.after_read_arg);
        if (rc != 0)
            return rc > 0 ? FOUND_DURABLE : FOUND_BAD_BLOCK; /* durable entries stay */
        pthread_mutex_lock(&s->lock);
        if (gw_idem_table_find(&s->inflight, key)) {
            pthread_mutex_unlock(&s->lock);
            return FOUND_IN_FLIGHT;
        }
        if (s->commits == commits)
            return FOUND_NONE;
        pthread_mutex_unlock(&s->lock);
    }
}

static enum gw_idem_verdict verdict_of(struct gw_idem_state *s, const struct gw_idem_rec *r,
                                       uint64_t fp_prefix)
{
    uint64_t now = gw_idem__now(s);
    if (s->window_ms && now > r->ack_ms && now - r->ack_ms > s->window_ms)
        return GW_IDEM_EXPIRED;
    return r->fp_prefix == fp_prefix ? GW_IDEM_REPLAY : GW_IDEM_REUSED;
}

static struct gw_idem_ref ref_of(const struct gw_idem_rec *r)
{
    struct gw_idem_ref ref = {r->segment, r->offset, r->len, r->seq, r->fp_prefix};
    return ref;
}

int gw_idem_claim(struct gw_idem *t, const char *id, size_t len,
                  const unsigned char fingerprint[GW_FINGERPRINT_LEN],
                  enum gw_idem_verdict *verdict, struct gw_idem_ref *ref)
{
    struct gw_idem_state *s = t->s;
    struct gw_idem_rec r = {.key = gw_idem_key_of(id, len)};
    uint64_t fp = gw_idem_fp_prefix(fingerprint);
    enum found f = lookup_keep_lock_if_none(s, r.key, &r);
    if (f == FOUND_BAD_BLOCK) {
        return -EIO;
    } else if (f == FOUND_IN_FLIGHT) {
        *verdict = GW_IDEM_IN_FLIGHT;
    } else if (f == FOUND_DURABLE) {
        *verdict = verdict_of(s, &r, fp);
        if (*verdict == GW_IDEM_REPLAY)
            *ref = ref_of(&r);
    } else {
        int rc = 0;
        if (gw_idem_table_full(&s->inflight))
            rc = gw_idem_table_grow(&s->inflight); /* bounded by concurrency, not history */
        r.fp_prefix = fp;
        if (rc == 0)
            gw_idem_table_add(&s->inflight, &r);
        pthread_mutex_unlock(&s->lock);
        *verdict = GW_IDEM_NEW;
        return rc;
    }
    return 0;
}

static void fill_ref(struct gw_idem_rec *r, struct gw_idem_ref ref)
{
    assert(ref.len <= UINT32_MAX);
    r->segment = ref.segment;
    r->offset = ref.offset;
    r->len = (uint32_t)ref.len;
    r->seq = ref.seq;
}

void gw_idem_commit(struct gw_idem *t, const char *id, size_t len, struct gw_idem_ref ref)
{
    struct gw_idem_state *s = t->s;
    struct gw_idem_key key = gw_idem_key_of(id, len);
    pthread_mutex_lock(&s->lock);
    struct gw_idem_rec *claim = gw_idem_table_find(&s->inflight, key);
    assert(claim); /* only a claim becomes durable */
    struct gw_idem_rec r = claim ? *claim : (struct gw_idem_rec){.key = key};
    pthread_mutex_unlock(&s->lock); /* the claim stays until the database holds the entry */
    fill_ref(&r, ref);
    r.ack_ms = gw_idem__now(s);
    r.flags = GW_IDEM_REC_USED;
    int stored = gw_idem_db_put(s->db, &r) == 0; /* a failure is logged as index_corrupt */
    pthread_mutex_lock(&s->lock);
    if (!stored) {
        /* The id is in the journal but not in the index: it stays claimed, every other lookup
         * fails (500 index_corrupt) and no persist passes its seq, so the start after the
         * repair re-inserts it (docs/journal.md §9). */
        s->broken = 1;
    } else if ((claim = gw_idem_table_find(&s->inflight, key)) != NULL) {
        gw_idem_table_remove(&s->inflight, claim);
        s->commits++;
    }
    pthread_mutex_unlock(&s->lock);
}

uint64_t gw_idem_top_seq(struct gw_idem *t)
{
    return gw_idem_db_top_seq(t->s->db);
}

void gw_idem_release(struct gw_idem *t, const char *id, size_t len)
{
    struct gw_idem_state *s = t->s;
    struct gw_idem_key key = gw_idem_key_of(id, len);
    pthread_mutex_lock(&s->lock);
    struct gw_idem_rec *claim = gw_idem_table_find(&s->inflight, key);
    assert(claim); /* only a claim is dropped: a durable id stays for good */
    if (claim)
        gw_idem_table_remove(&s->inflight, claim);
    pthread_mutex_unlock(&s->lock);
}

int gw_idem_insert(struct gw_idem *t, const char *id, size_t len,
                   const unsigned char fingerprint[GW_FINGERPRINT_LEN], struct gw_idem_ref ref)
{
    struct gw_idem_state *s = t->s;
    struct gw_idem_rec r = {.key = gw_idem_key_of(id, len)};
    enum found f = lookup_keep_lock_if_none(s, r.key, &r);
    if (f == FOUND_BAD_BLOCK)
        return -EIO;
    if (f == FOUND_DURABLE)
        return r.seq == ref.seq ? 0 : -EEXIST;
    if (f == FOUND_IN_FLIGHT)
        return -EEXIST;
    r.fp_prefix = gw_idem_fp_prefix(fingerprint);
    fill_ref(&r, ref);
    r.ack_ms = gw_idem__now(s); /* replay does not know when it was acknowledged: the window
                                   starts now */
    r.flags = GW_IDEM_REC_USED;
    int rc = gw_idem_db_put(s->db, &r); /* under the lock: no claim of this id meanwhile */
    s->commits += rc == 0;
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int gw_idem_find(struct gw_idem *t, const char *id, size_t len, struct gw_idem_ref *ref)
{
    struct gw_idem_state *s = t->s;
    struct gw_idem_rec r;
    enum found f = lookup_keep_lock_if_none(s, gw_idem_key_of(id, len), &r);
    if (f == FOUND_NONE)
        pthread_mutex_unlock(&s->lock);
    if (f != FOUND_DURABLE)
        return f == FOUND_BAD_BLOCK ? -EIO : -ENOENT;
    *ref = ref_of(&r);
    return 0;
}

int gw_idem_persist(struct gw_idem *t, uint64_t through_seq, struct gw_error *err)
{
    struct gw_idem_state *s = t->s;
    char msg[sizeof(s->dir) + 128];
    pthread_mutex_lock(&s->persist_lock);
    uint64_t seq = through_seq > s->durable_seq ? through_seq : s->durable_seq;
    pthread_mutex_lock(&s->lock);
    int broken = s->broken;
    pthread_mutex_unlock(&s->lock);
    int rc = -EIO;
    if (broken)
        snprintf(msg, sizeof(msg), "%s: an acknowledged id could not be stored", s->dir);
    else
        rc = gw_idem_db_persist(s->db, seq, msg, sizeof(msg));
    if (rc == 0)
        gw_crash_point("index-flushed");
    if (rc == 0)
        s->durable_seq = seq;
    else
        gw_error_set(err, "", "%s", msg);
    pthread_mutex_unlock(&s->persist_lock);
    return rc;
}
