/* The idempotency table: a chained hash map under one mutex (lookups are short). */
#include "idempotency.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fnv.h"

struct gw_idem_entry {
    struct gw_idem_entry *next;
    uint64_t hash;
    int durable;
    unsigned char fingerprint[GW_FINGERPRINT_LEN];
    struct gw_idem_ref ref;
    size_t len;
    char id[]; /* not NUL-terminated */
};

int gw_idem_open(struct gw_idem *t, const char *state_dir, const struct gw_idem_options *o,
                 uint64_t *durable_seq, struct gw_error *err)
{
    (void)state_dir;
    (void)o;
    *durable_seq = 0;
    memset(t, 0, sizeof(*t));
    t->mask = 1023;
    t->buckets = calloc(t->mask + 1, sizeof(*t->buckets));
    if (!t->buckets) {
        gw_error_set(err, "", "index: out of memory");
        return -ENOMEM;
    }
    pthread_mutex_init(&t->lock, NULL);
    return 0;
}

int gw_idem_persist(struct gw_idem *t, uint64_t through_seq, struct gw_error *err)
{
    (void)t;
    (void)through_seq;
    (void)err;
    return 0;
}

void gw_idem_close(struct gw_idem *t)
{
    if (!t->buckets)
        return;
    for (size_t i = 0; i <= t->mask; i++) {
        struct gw_idem_entry *e = t->buckets[i];
        while (e) {
            struct gw_idem_entry *next = e->next;
            free(e);
            e = next;
        }
    }
    free(t->buckets);
    pthread_mutex_destroy(&t->lock);
    memset(t, 0, sizeof(*t));
}

/* The slot that points at the entry for `id` (or at the NULL ending its chain). */
static struct gw_idem_entry **slot_of(struct gw_idem *t, const char *id, size_t len, uint64_t h)
{
    struct gw_idem_entry **p = &t->buckets[h & t->mask];
    while (*p && !((*p)->hash == h && (*p)->len == len && memcmp((*p)->id, id, len) == 0))
        p = &(*p)->next;
    return p;
}

/* Doubles the bucket array when the chains get long; a failed grow only costs speed. */
static void maybe_grow(struct gw_idem *t)
{
    if (t->count < 2 * (t->mask + 1))
        return;
    size_t mask = 2 * t->mask + 1;
    struct gw_idem_entry **buckets = calloc(mask + 1, sizeof(*buckets));
    if (!buckets)
        return;
    for (size_t i = 0; i <= t->mask; i++) {
        struct gw_idem_entry *e = t->buckets[i];
        while (e) {
            struct gw_idem_entry *next = e->next;
            e->next = buckets[e->hash & mask];
            buckets[e->hash & mask] = e;
            e = next;
        }
    }
    free(t->buckets);
    t->buckets = buckets;
    t->mask = mask;
}

/* Adds an entry at `slot` (the lock is held). Returns 0 or -ENOMEM. */
static int add_entry(struct gw_idem *t, struct gw_idem_entry **slot, const char *id, size_t len,
                     uint64_t h, const unsigned char *fingerprint)
{
    struct gw_idem_entry *e = malloc(sizeof(*e) + len);
    if (!e)
        return -ENOMEM;
    memset(e, 0, sizeof(*e));
    e->hash = h;
    e->len = len;
    memcpy(e->id, id, len);
    memcpy(e->fingerprint, fingerprint, GW_FINGERPRINT_LEN);
    *slot = e;
    t->count++;
    maybe_grow(t);
    return 0;
}

int gw_idem_claim(struct gw_idem *t, const char *id, size_t len,
                  const unsigned char fingerprint[GW_FINGERPRINT_LEN],
                  enum gw_idem_verdict *verdict, struct gw_idem_ref *ref)
{
    uint64_t h = gw_fnv1a(id, len);
    int rc = 0;
    pthread_mutex_lock(&t->lock);
    struct gw_idem_entry **slot = slot_of(t, id, len, h);
    struct gw_idem_entry *e = *slot;
    if (!e) {
        *verdict = GW_IDEM_NEW;
        rc = add_entry(t, slot, id, len, h, fingerprint);
    } else if (!e->durable) {
        *verdict = GW_IDEM_IN_FLIGHT;
    } else if (memcmp(e->fingerprint, fingerprint, GW_FINGERPRINT_LEN) != 0) {
        *verdict = GW_IDEM_REUSED;
    } else {
        *verdict = GW_IDEM_REPLAY;
        *ref = e->ref;
    }
    pthread_mutex_unlock(&t->lock);
    return rc;
}

void gw_idem_commit(struct gw_idem *t, const char *id, size_t len, struct gw_idem_ref ref)
{
    uint64_t h = gw_fnv1a(id, len);
    pthread_mutex_lock(&t->lock);
    struct gw_idem_entry *e = *slot_of(t, id, len, h);
    assert(e && !e->durable); /* only a claim (in flight) becomes durable */
    if (e && !e->durable) {
        e->durable = 1;
        e->ref = ref;
        t->durable++;
    }
    pthread_mutex_unlock(&t->lock);
}

void gw_idem_release(struct gw_idem *t, const char *id, size_t len)
{
    uint64_t h = gw_fnv1a(id, len);
    pthread_mutex_lock(&t->lock);
    struct gw_idem_entry **slot = slot_of(t, id, len, h);
    struct gw_idem_entry *e = *slot;
    assert(e && !e->durable); /* only a claim is dropped: a durable id stays for good */
    if (e && !e->durable) {
        *slot = e->next;
        free(e);
        t->count--;
    }
    pthread_mutex_unlock(&t->lock);
}

int gw_idem_insert(struct gw_idem *t, const char *id, size_t len,
                   const unsigned char fingerprint[GW_FINGERPRINT_LEN], struct gw_idem_ref ref)
{
    uint64_t h = gw_fnv1a(id, len);
    pthread_mutex_lock(&t->lock);
    struct gw_idem_entry **slot = slot_of(t, id, len, h);
    int same = *slot && (*slot)->durable && (*slot)->ref.seq == ref.seq;
    int rc = same ? 0 : *slot ? -EEXIST : add_entry(t, slot, id, len, h, fingerprint);
    if (rc == 0 && !same) {
        struct gw_idem_entry *e = *slot_of(t, id, len, h);
        e->durable = 1;
        e->ref = ref;
        t->durable++;
    }
    assert(t->durable <= t->count);
    pthread_mutex_unlock(&t->lock);
    return rc;
}

int gw_idem_find(struct gw_idem *t, const char *id, size_t len, struct gw_idem_ref *ref)
{
    uint64_t h = gw_fnv1a(id, len);
    pthread_mutex_lock(&t->lock);
    struct gw_idem_entry *e = *slot_of(t, id, len, h);
    int rc = e && e->durable ? 0 : -ENOENT;
    if (rc == 0)
        *ref = e->ref;
    pthread_mutex_unlock(&t->lock);
    return rc;
}

size_t gw_idem_durable(struct gw_idem *t)
{
    pthread_mutex_lock(&t->lock);
    size_t n = t->durable;
    pthread_mutex_unlock(&t->lock);
    return n;
}
