/* The request path of the idempotency index: claims, commits and lookups over the in-RAM tables
 * and the published runs (docs/decisions.md §15). The lock is held for RAM probes only; runs
 * are searched outside it and a change of runs meanwhile sends the lookup round again. */
#include "idempotency.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idem_state.h"

enum found { FOUND_NONE, FOUND_IN_FLIGHT, FOUND_DURABLE, FOUND_BAD_BLOCK };

/* The lock held: `key` among claims and the tables not yet written as a run. */
static enum found find_in_ram(struct gw_idem_state *s, struct gw_idem_key key,
                              struct gw_idem_rec *out)
{
    if (gw_idem_table_find(&s->inflight, key))
        return FOUND_IN_FLIGHT;
    const struct gw_idem_rec *r = gw_idem_table_find(&s->active, key);
    for (size_t i = s->nfrozen; !r && i > 0; i--)
        r = gw_idem_table_find(&s->frozen[i - 1], key);
    if (!r)
        return FOUND_NONE;
    *out = *r;
    return FOUND_DURABLE;
}

/* Looks `key` up everywhere. Returns FOUND_NONE with the lock HELD (so that the caller adds the
 * key before anyone else can), else unlocked; FOUND_BAD_BLOCK when a run's block it had to read
 * failed its checksum (whether the id is known cannot be said). */
static enum found lookup_keep_lock_if_none(struct gw_idem_state *s, struct gw_idem_key key,
                                           struct gw_idem_rec *out)
{
    for (;;) {
        pthread_mutex_lock(&s->lock);
        enum found f = find_in_ram(s, key, out);
        if (f != FOUND_NONE) {
            pthread_mutex_unlock(&s->lock);
            return f;
        }
        struct gw_idem_runset *set = gw_idem__runset_get(s);
        uint64_t version = s->version;
        pthread_mutex_unlock(&s->lock);
        const struct gw_idem_rec *hit = NULL;
        int rc = gw_idem__runset_find(set, key, &hit);
        if (rc > 0)
            *out = *hit;
        gw_idem__runset_put(set);
        if (rc != 0)
            return rc > 0 ? FOUND_DURABLE : FOUND_BAD_BLOCK; /* runs only ever gain entries */
        pthread_mutex_lock(&s->lock);
        if (s->version == version) { /* no entry left RAM for a run we did not search */
            f = find_in_ram(s, key, out);
            if (f == FOUND_NONE)
                return FOUND_NONE;
            pthread_mutex_unlock(&s->lock);
            return f;
        }
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
    struct gw_idem_ref ref = {r->segment, r->offset, r->len, r->seq};
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

/* The lock held: adds a durable record to the active table, freezing a full one first. */
static int add_durable_locked(struct gw_idem_state *s, const struct gw_idem_rec *r)
{
    if (gw_idem_table_full(&s->active)) {
        int rc = gw_idem__freeze_locked(s);
        if (rc != 0 && s->active.count + 1 >= s->active.mask)
            return rc; /* no fresh table and the full one has no slot left */
    }
    gw_idem_table_add(&s->active, r);
    s->durable++;
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
    uint64_t now = gw_idem__now(s);
    pthread_mutex_lock(&s->lock);
    struct gw_idem_rec *claim = gw_idem_table_find(&s->inflight, key);
    assert(claim); /* only a claim becomes durable */
    if (claim) {
        struct gw_idem_rec r = *claim;
        gw_idem_table_remove(&s->inflight, claim);
        fill_ref(&r, ref);
        r.ack_ms = now;
        if (add_durable_locked(s, &r) != 0) {
            /* An acknowledged id must never be forgotten: out of memory ends the process. */
            fprintf(stderr, "shardgate: out of memory\n");
            exit(1);
        }
    }
    pthread_mutex_unlock(&s->lock);
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
    uint64_t now = gw_idem__now(s);
    enum found f = lookup_keep_lock_if_none(s, r.key, &r);
    if (f == FOUND_BAD_BLOCK)
        return -EIO;
    if (f == FOUND_DURABLE)
        return r.seq == ref.seq ? 0 : -EEXIST;
    if (f == FOUND_IN_FLIGHT)
        return -EEXIST;
    r.fp_prefix = gw_idem_fp_prefix(fingerprint);
    fill_ref(&r, ref);
    r.ack_ms = now; /* replay does not know when it was acknowledged: the window starts now */
    int rc = add_durable_locked(s, &r);
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

size_t gw_idem_durable(struct gw_idem *t)
{
    pthread_mutex_lock(&t->s->lock);
    size_t n = t->s->durable;
    pthread_mutex_unlock(&t->s->lock);
    return n;
}

size_t gw_idem_runs(struct gw_idem *t)
{
    pthread_mutex_lock(&t->s->lock);
    size_t n = t->s->runs->n;
    pthread_mutex_unlock(&t->s->lock);
    return n;
}
