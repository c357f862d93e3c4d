/* Size-tiered merging of the idempotency index's runs (docs/decisions.md §15): when a tier
 * holds GW_IDEM_TIER_FANIN runs, they become one run of the next tier, written beside them and
 * swapped in by a new manifest; lookups then search O(log n) runs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crashpoint.h"
#include "idem_state.h"
#include "io.h"

#define GW_IDEM_TIER_FANIN 4

static unsigned tier_of(uint64_t count, uint64_t base)
{
    unsigned tier = 0;
    for (uint64_t c = count; c >= base * GW_IDEM_TIER_FANIN; c /= GW_IDEM_TIER_FANIN)
        tier++;
    return tier;
}

/* The runs of the lowest tier holding at least the fan-in, referenced, into `in`. */
static size_t pick_inputs(struct gw_idem_state *s, struct gw_idem_run **in, size_t cap)
{
    pthread_mutex_lock(&s->lock);
    const struct gw_idem_runset *set = s->runs;
    size_t n = 0;
    for (unsigned tier = 0; tier < 64 && n == 0; tier++) {
        size_t k = 0;
        for (size_t i = 0; i < set->n; i++)
            k += tier_of(set->runs[i]->count, s->tune.merge_base) == tier;
        if (k < GW_IDEM_TIER_FANIN)
            continue;
        for (size_t i = 0; i < set->n && n < cap; i++)
            if (tier_of(set->runs[i]->count, s->tune.merge_base) == tier) {
                in[n] = set->runs[i];
                gw_idem_run_ref(in[n++]);
            }
    }
    pthread_mutex_unlock(&s->lock);
    return n;
}

/* Writes the union of `in` (no key in two of them) in key order. Returns 0 or -errno. */
static int merge_into(struct gw_idem_run_writer *w, struct gw_idem_run **in, size_t n)
{
    size_t pos[64] = {0};
    for (;;) {
        size_t best = n;
        for (size_t i = 0; i < n; i++)
            if (pos[i] < in[i]->count &&
                (best == n ||
                 gw_idem_key_cmp(in[i]->recs[pos[i]].key, in[best]->recs[pos[best]].key) < 0))
                best = i;
        if (best == n)
            return 0;
        int rc = gw_idem_run_put(w, &in[best]->recs[pos[best]]);
        if (rc != 0)
            return rc;
        pos[best]++;
    }
}

/* The current runs without `in`, plus `out`; NULL when out of memory. */
static struct gw_idem_runset *swap_runs(struct gw_idem_state *s, struct gw_idem_run **in, size_t n,
                                        struct gw_idem_run *out)
{
    pthread_mutex_lock(&s->lock);
    const struct gw_idem_runset *cur = s->runs;
    struct gw_idem_runset *set = gw_idem__runset_new(cur->n - n + 1);
    size_t k = 0;
    for (size_t i = 0; set && i < cur->n; i++) {
        int merged = 0;
        for (size_t j = 0; j < n; j++)
            merged |= cur->runs[i] == in[j];
        if (!merged) {
            set->runs[k] = cur->runs[i];
            gw_idem_run_ref(set->runs[k++]);
        }
    }
    pthread_mutex_unlock(&s->lock);
    if (set)
        set->runs[k] = out;
    return set;
}

/* Writes and maps the merged run; the io_lock is not held meanwhile. */
static int write_merged(struct gw_idem_state *s, struct gw_idem_run **in, size_t n,
                        struct gw_idem_run **out)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        total += in[i]->count;
        if (gw_idem_run_check_all(in[i]) != 0)
            return -EIO; /* a bad block must not gain a fresh checksum in the merged run */
    }
    pthread_mutex_lock(&s->io_lock);
    uint64_t id = s->next_run++;
    pthread_mutex_unlock(&s->io_lock);
    struct gw_idem_run_writer *w = malloc(sizeof(*w));
    if (!w)
        return -ENOMEM;
    int rc = gw_idem_run_begin(w, s->dir, id, total);
    if (rc == 0 && (rc = merge_into(w, in, n)) != 0)
        gw_idem_run_abandon(w);
    unsigned char sha[SHA256_DIGEST_LENGTH];
    if (rc == 0)
        rc = gw_idem_run_finish(w, sha);
    free(w);
    const char *why;
    if (rc == 0 && !(*out = gw_idem_run_open(s->dir, id, total, sha, 0, &why)))
        rc = -EIO;
    return rc;
}

/* The io_lock held: lists `set` in a new manifest, then publishes it. */
static int install(struct gw_idem_state *s, struct gw_idem_runset *set)
{
    int rc = gw_idem__write_manifest(s, set, s->durable_seq);
    if (rc != 0) {
        gw_idem__runset_put(set);
        return rc;
    }
    pthread_mutex_lock(&s->lock);
    struct gw_idem_runset *old = gw_idem__publish_locked(s, set);
    pthread_mutex_unlock(&s->lock);
    gw_idem__runset_put(old);
    return 0;
}

int gw_idem__merge_once(struct gw_idem_state *s, struct gw_error *err)
{
    struct gw_idem_run *in[64], *out = NULL;
    size_t n = pick_inputs(s, in, 64);
    if (n == 0)
        return 0;
    int rc = write_merged(s, in, n, &out);
    if (rc == 0)
        gw_crash_point("merge-written");
    if (rc == 0) {
        pthread_mutex_lock(&s->io_lock); /* no flush changes the runs meanwhile */
        struct gw_idem_runset *set = swap_runs(s, in, n, out);
        rc = set ? install(s, set) : -ENOMEM;
        if (!set)
            gw_idem_run_unref(out);
        pthread_mutex_unlock(&s->io_lock);
    }
    if (rc == 0)
        gw_crash_point("merge-installed");
    char path[4200], name[64];
    for (size_t i = 0; i < n; i++) {
        if (rc == 0) { /* no longer listed: mapped readers keep their pages after the unlink */
            gw_idem_run_name(name, sizeof(name), in[i]->id);
            snprintf(path, sizeof(path), "%s/%s", s->dir, name);
            gw_io.unlink(path);
        }
        gw_idem_run_unref(in[i]);
    }
    if (rc != 0)
        gw_error_set(err, "", "%s: cannot merge index runs: %s", s->dir, strerror(-rc));
    return rc == 0 ? 1 : rc;
}
