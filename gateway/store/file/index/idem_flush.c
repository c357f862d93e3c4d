/* From RAM to disk: freezing the active table, writing frozen tables as one run, the manifest,
 * and gw_idem_persist (docs/journal.md §9). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "idem_manifest.h"
#include "idem_state.h"
#include "idempotency.h"

int gw_idem__freeze_locked(struct gw_idem_state *s)
{
    struct gw_idem_table fresh = s->spare;
    if (!fresh.slots && gw_idem_table_init(&fresh, s->tune.table_slots) != 0)
        return -ENOMEM; /* mapped lazily (idem_table.c): O(1) even here, under the lock */
    if (s->nfrozen == s->frozen_cap) {
        size_t cap = s->frozen_cap ? 2 * s->frozen_cap : 4;
        struct gw_idem_table *f = realloc(s->frozen, cap * sizeof(*f));
        if (!f) {
            if (!s->spare.slots)
                gw_idem_table_free(&fresh);
            return -ENOMEM;
        }
        s->frozen = f;
        s->frozen_cap = cap;
    }
    s->frozen[s->nfrozen++] = s->active;
    s->active = fresh;
    memset(&s->spare, 0, sizeof(s->spare));
    pthread_cond_signal(&s->wake); /* a new spare, and the frozen table to write */
    return 0;
}

int gw_idem__write_manifest(struct gw_idem_state *s, const struct gw_idem_runset *set,
                            uint64_t durable_seq)
{
    struct gw_idem_manifest m = {durable_seq, s->next_run, set->n, NULL};
    m.runs = calloc(set->n ? set->n : 1, sizeof(*m.runs));
    if (!m.runs)
        return -ENOMEM;
    for (size_t i = 0; i < set->n; i++) {
        m.runs[i].id = set->runs[i]->id;
        m.runs[i].count = set->runs[i]->count;
        memcpy(m.runs[i].sha256, set->runs[i]->sha256, SHA256_DIGEST_LENGTH);
    }
    int rc = gw_idem_manifest_write(s->dir, &m);
    free(m.runs);
    return rc;
}

/* The used slots of `n` tables, sorted by key. Returns the records (NULL: out of memory). */
static struct gw_idem_rec *gather(const struct gw_idem_table *tabs, size_t n, size_t *count)
{
    size_t total = 0, k = 0;
    for (size_t i = 0; i < n; i++)
        total += tabs[i].count;
    struct gw_idem_rec *recs = malloc((total ? total : 1) * sizeof(*recs));
    for (size_t i = 0; recs && i < n; i++)
        for (size_t j = 0; j <= tabs[i].mask; j++)
            if (tabs[i].slots[j].flags & GW_IDEM_REC_USED)
                recs[k++] = tabs[i].slots[j];
    if (recs)
        gw_idem_rec_sort(recs, total);
    *count = total;
    return recs;
}

/* Writes `n` sorted records as a new run and maps it. Returns 0 or -errno. */
static int write_run(struct gw_idem_state *s, const struct gw_idem_rec *recs, size_t n,
                     struct gw_idem_run **out)
{
    struct gw_idem_run_writer *w = malloc(sizeof(*w));
    if (!w)
        return -ENOMEM;
    uint64_t id = s->next_run++;
    int rc = gw_idem_run_begin(w, s->dir, id, n);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = gw_idem_run_put(w, &recs[i]);
    unsigned char sha[SHA256_DIGEST_LENGTH];
    if (rc == 0)
        rc = gw_idem_run_finish(w, sha);
    else if (w->file.fd >= 0)
        gw_idem_run_abandon(w);
    free(w);
    const char *why;
    if (rc == 0 && !(*out = gw_idem_run_open(s->dir, id, n, sha, 0, &why)))
        rc = -EIO;
    return rc;
}

/* The current runs plus `extra`; NULL when out of memory. */
static struct gw_idem_runset *runs_plus(struct gw_idem_state *s, struct gw_idem_run *extra)
{
    pthread_mutex_lock(&s->lock);
    struct gw_idem_runset *cur = s->runs;
    struct gw_idem_runset *set = gw_idem__runset_new(cur->n + 1);
    for (size_t i = 0; set && i < cur->n; i++) {
        set->runs[i] = cur->runs[i];
        gw_idem_run_ref(set->runs[i]);
    }
    pthread_mutex_unlock(&s->lock);
    if (set)
        set->runs[set->n - 1] = extra;
    return set;
}

/* Publishes `set` and forgets the first `k` frozen tables, now in it. */
static void publish_flushed(struct gw_idem_state *s, struct gw_idem_runset *set, size_t k)
{
    struct gw_idem_table *done = malloc((k ? k : 1) * sizeof(*done));
    pthread_mutex_lock(&s->lock);
    struct gw_idem_runset *old = gw_idem__publish_locked(s, set);
    for (size_t i = 0; i < k; i++) {
        if (done)
            done[i] = s->frozen[i];
        else
            gw_idem_table_free(&s->frozen[i]); /* under the lock, rare: out of memory */
    }
    memmove(s->frozen, s->frozen + k, (s->nfrozen - k) * sizeof(*s->frozen));
    s->nfrozen -= k;
    pthread_mutex_unlock(&s->lock);
    gw_idem__runset_put(old);
    for (size_t i = 0; done && i < k; i++)
        gw_idem_table_free(&done[i]); /* the unmap, outside the lock */
    free(done);
}

static int fail(struct gw_error *err, int rc, const char *dir, const char *what)
{
    gw_error_set(err, "", "%s: %s: %s", dir, what, strerror(-rc));
    return rc;
}

int gw_idem__flush(struct gw_idem_state *s, uint64_t durable_seq, struct gw_error *err)
{
    pthread_mutex_lock(&s->lock);
    size_t k = s->nfrozen, n = 0;
    struct gw_idem_table *tabs = malloc((k ? k : 1) * sizeof(*tabs));
    if (tabs && k) /* frozen tables are immutable: read without the lock; none: no list yet */
        memcpy(tabs, s->frozen, k * sizeof(*tabs));
    pthread_mutex_unlock(&s->lock);
    struct gw_idem_rec *recs = tabs ? gather(tabs, k, &n) : NULL;
    free(tabs);
    if (!recs)
        return fail(err, -ENOMEM, s->dir, "cannot gather the index entries");
    struct gw_idem_run *run = NULL;
    int rc = n ? write_run(s, recs, n, &run) : 0;
    free(recs);
    if (rc != 0)
        return fail(err, rc, s->dir, "cannot write an index run");
    struct gw_idem_runset *set = run ? runs_plus(s, run) : NULL;
    if (run && !set) {
        gw_idem_run_unref(run);
        return fail(err, -ENOMEM, s->dir, "cannot list the index runs");
    }
    pthread_mutex_lock(&s->lock);
    const struct gw_idem_runset *listed = set ? set : s->runs;
    pthread_mutex_unlock(&s->lock); /* only io_lock holders change s->runs: still valid */
    rc = gw_idem__write_manifest(s, listed, durable_seq);
    if (rc != 0) {
        gw_idem__runset_put(set);
        return fail(err, rc, s->dir, "cannot replace the index manifest");
    }
    s->durable_seq = durable_seq;
    if (set)
        publish_flushed(s, set, k);
    return 0;
}

int gw_idem_persist(struct gw_idem *t, uint64_t through_seq, struct gw_error *err)
{
    struct gw_idem_state *s = t->s;
    pthread_mutex_lock(&s->lock);
    int rc = s->active.count ? gw_idem__freeze_locked(s) : 0;
    pthread_mutex_unlock(&s->lock);
    if (rc != 0) {
        gw_error_set(err, "", "%s: out of memory", s->dir);
        return rc;
    }
    pthread_mutex_lock(&s->io_lock);
    uint64_t seq = through_seq > s->durable_seq ? through_seq : s->durable_seq;
    rc = gw_idem__flush(s, seq, err);
    pthread_mutex_unlock(&s->io_lock);
    return rc;
}
