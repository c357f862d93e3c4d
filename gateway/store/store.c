/* The store's face (docs/architecture.md §1): commits, a stored receipt or a feed page from
 * either store, with the reason when there is none. */
#include "store.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

int gw_store_init(struct gw_store *s)
{
    s->journal.fd = -1;
    return gw_ledger_init(&s->ledger);
}

int gw_store_writable(struct gw_store *s)
{
    return s->pg ? gw_pg_store_available(&s->pg_store) : !gw_committer_failed(&s->committer);
}

const char *gw_store_check_name(const struct gw_store *s)
{
    return s->pg ? "store" : "journal";
}

void gw_store_refusal(struct gw_store *s, struct gw_store_refusal *out)
{
    if (s->pg) {
        struct gw_pg_store *p = &s->pg_store;
        out->code = "store_unavailable";
        out->retry = 1;
        pthread_mutex_lock(&p->worker.lock);
        gw_error_set(&out->error, "", "%s", p->error.msg[0] ? p->error.msg : "store: unavailable");
        pthread_mutex_unlock(&p->worker.lock);
        return;
    }
    struct gw_committer *c = &s->committer;
    out->code = "journal_unavailable";
    out->retry = 0;
    gw_error_set(&out->error, "", "%s",
                 gw_committer_failed(c) ? c->error.msg : "journal: not accepting records");
}

int gw_store_claim(struct gw_store *s, const char *id, size_t len, const unsigned char *fingerprint,
                   enum gw_idem_verdict *verdict, struct gw_idem_ref *ref)
{
    if (s->pg) {
        *verdict = GW_IDEM_NEW; /* the store's transaction decides (docs/journal.md §10) */
        return 0;
    }
    return gw_idem_claim(&s->idem, id, len, fingerprint, verdict, ref);
}

void gw_store_release(struct gw_store *s, const char *id, size_t len)
{
    if (!s->pg)
        gw_idem_release(&s->idem, id, len);
}

/* The journal writer's completion of a receipt: the index and the totals learn it before the
 * submitter does. */
static void journaled(struct gw_commit_item *item, int rc)
{
    struct gw_store *s = item->store;
    size_t len = strlen(item->batch_id);
    if (rc == 0) {
        struct gw_idem_ref ref = {item->segment, item->receipt_offset, item->receipt_len,
                                  item->seq};
        gw_idem_commit(&s->idem, item->batch_id, len, ref);
        /* Out of memory for the per-epoch totals only: this process writes no more
         * checkpoints, so the next start replays from the last good one (docs/journal.md §7).
         * The epoch_seq is the one the writer found at the receipt's place in the journal, as a
         * replay does, not the view's (they differ when an epoch id recurs). */
        gw_ledger_add(&s->ledger, item->epoch_seq ? item->epoch_seq : item->view_epoch_seq,
                      item->slots, item->tally, item->members->count);
    } else {
        gw_idem_release(&s->idem, item->batch_id, len);
    }
    item->submitter_done(item, rc);
}

void gw_store_submit(struct gw_store *s, struct gw_commit_item *item)
{
    if (s->pg) { /* the database holds the id and the totals */
        gw_pg_store_submit(&s->pg_store, item);
        return;
    }
    item->receipt_crc = gw_record_crc(item->receipt, item->receipt_len);
    item->store = s;
    item->submitter_done = item->done;
    item->done = journaled;
    gw_committer_submit(&s->committer, item);
}

/* Bytewise id order (docs/contract.md §2), as the database's COLLATE "C". */
static int id_cmp(const char *a, size_t a_len, const char *b, size_t b_len)
{
    int c = memcmp(a, b, a_len < b_len ? a_len : b_len);
    return c ? c : (a_len > b_len) - (a_len < b_len);
}

/* A member of `m` as an entry with no total yet. */
static struct gw_ledger_entry member_entry(const struct gw_shard *sh)
{
    struct gw_ledger_entry e = {
        .id_len = sh->id_len, .weight = sh->weight, .capacity = sh->capacity};
    memcpy(e.id, sh->id, sh->id_len);
    return e;
}

/* The database's totals merged with the members that have none, both in id order. */
static int pg_shard_totals(struct gw_store *s, const struct gw_membership *m,
                           struct gw_ledger_entry **out, size_t *count, struct gw_error *err)
{
    struct gw_ledger_entry *all = NULL;
    size_t n = 0;
    int rc = gw_pg_store_totals(&s->pg_store, &all, &n, err);
    if (rc != 0)
        return rc == -EIO ? -EAGAIN : rc;
    struct gw_ledger_entry *merged = calloc(n + m->count + 1, sizeof(*merged));
    size_t i = 0, j = 0, k = 0;
    while (merged && (i < n || j < m->count)) {
        const struct gw_shard *sh = j < m->count ? &m->shards[j] : NULL;
        int c = i == n ? 1 : !sh ? -1 : id_cmp(all[i].id, all[i].id_len, sh->id, sh->id_len);
        j += c >= 0;
        merged[k++] = c <= 0 ? all[i++] : member_entry(sh);
    }
    free(all);
    *out = merged;
    *count = k;
    return merged ? 0 : -ENOMEM;
}

int gw_store_shard_totals(struct gw_store *s, const struct gw_membership *m,
                          struct gw_ledger_entry **out, size_t *count, struct gw_error *err)
{
    if (s->pg)
        return pg_shard_totals(s, m, out, count, err);
    *out = gw_ledger_snapshot(&s->ledger, count);
    return *out ? 0 : -ENOMEM;
}

static const struct gw_ledger_entry *entry_of(const struct gw_ledger_entry *all, size_t n,
                                              const struct gw_shard *sh)
{
    for (size_t lo = 0, hi = n; lo < hi;) {
        size_t mid = lo + (hi - lo) / 2;
        int c = id_cmp(all[mid].id, all[mid].id_len, sh->id, sh->id_len);
        if (c == 0)
            return &all[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int gw_store_member_totals(struct gw_store *s, const struct gw_membership *m, const size_t *slots,
                           struct gw_total *out, struct gw_error *err)
{
    if (!s->pg) {
        gw_ledger_totals(&s->ledger, slots, m->count, out);
        return 0;
    }
    struct gw_ledger_entry *all = NULL;
    size_t n = 0;
    int rc = gw_pg_store_totals(&s->pg_store, &all, &n, err);
    for (size_t i = 0; rc == 0 && i < m->count; i++) {
        const struct gw_ledger_entry *e = entry_of(all, n, &m->shards[i]);
        out[i] = e ? e->total : (struct gw_total){0, 0};
    }
    free(all);
    return rc == -EIO ? -EAGAIN : rc;
}

int gw_store_holds_membership(const struct gw_store *s)
{
    return s->pg;
}

/* The database's failures other than these are its being out of reach. */
static int pg_code(int rc)
{
    return rc == 0 || rc == -ESTALE || rc == -ENOMEM || rc == -EINVAL ? rc : -EAGAIN;
}

/* Waits for one epoch record to be durable (the writer's completion). */
struct epoch_wait {
    struct gw_commit_item item;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done, rc;
};

static void epoch_synced(struct gw_commit_item *item, int rc)
{
    struct epoch_wait *w = (struct epoch_wait *)item;
    pthread_mutex_lock(&w->lock);
    w->rc = rc;
    w->done = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

/* Journals the epoch record of `t` after every receipt queued before it; returns once synced. */
static int journal_epoch(struct gw_store *s, const struct gw_topology *t,
                         enum gw_epoch_source source, struct gw_epoch_entry *out,
                         struct gw_error *err)
{
    struct epoch_wait w = {.item = {.epoch_of = t, .source = source, .done = epoch_synced}};
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.cond, NULL);
    gw_committer_submit(&s->committer, &w.item);
    pthread_mutex_lock(&w.lock);
    while (!w.done)
        pthread_cond_wait(&w.cond, &w.lock);
    pthread_mutex_unlock(&w.lock);
    pthread_cond_destroy(&w.cond);
    pthread_mutex_destroy(&w.lock);
    if (w.rc == 0 && !w.item.chained)
        w.rc = -ENOMEM;
    if (w.rc != 0)
        gw_error_set(err, "", "%s",
                     gw_committer_failed(&s->committer)
                         ? s->committer.error.msg
                         : "journal: the epoch record was not written");
    *out = w.item.entry;
    return w.rc;
}

int gw_store_record_epoch(struct gw_store *s, const struct gw_topology *next,
                          enum gw_epoch_source source, const char *base,
                          struct gw_epoch_entry *entry, struct gw_error *err)
{
    if (s->pg)
        return pg_code(gw_pg_epoch_record(&s->pg_store, next, source, base, entry, err));
    return journal_epoch(s, next, source, entry, err);
}

int gw_store_catch_up(struct gw_store *s, gw_pg_epoch_fn apply, void *ctx, struct gw_error *err)
{
    return s->pg ? pg_code(gw_pg_store_catch_up(&s->pg_store, apply, ctx, err)) : 0;
}

void gw_store_stop(struct gw_store *s)
{
    gw_committer_stop(&s->committer); /* offers the last checkpoint, after the last group */
    if (s->pg)
        gw_pg_store_stop(&s->pg_store);     /* commits what is queued */
    gw_checkpointer_stop(&s->checkpointer); /* writes it */
    gw_scrub_stop(&s->scrub);
}

void gw_store_close(struct gw_store *s)
{
    gw_committer_destroy(&s->committer);
    gw_feed_watch_destroy(&s->watch);
    gw_feed_free(&s->feed);
    if (s->journal.path)
        gw_journal_close(&s->journal);
    if (s->idem_open)
        gw_idem_close(&s->idem);
    if (s->pg)
        gw_pg_store_close(&s->pg_store);
    gw_ledger_free(&s->ledger);
}

struct gw_epoch_chain *gw_store_chain(struct gw_store *s)
{
    return s->pg ? &s->pg_store.chain : &s->journal.chain;
}

int gw_store_read_ref(struct gw_store *s, struct gw_idem_ref ref, struct gw_buf *out,
                      struct gw_store_miss *miss)
{
    miss->seq = ref.seq;
    miss->segment = ref.segment;
    miss->line = gw_journal_receipt_line(ref.seq, ref.offset);
    if (gw_segments_archived(&s->journal.segs, ref.segment))
        return -ESTALE;
    /* appends nothing on an error */
    return gw_journal_read_receipt(&s->journal, ref.segment, ref.seq, ref.offset, (size_t)ref.len,
                                   out);
}

static int read_pg(struct gw_store *s, const char *id, struct gw_buf *out,
                   struct gw_store_miss *miss)
{
    size_t had = out->len;
    int rc = gw_pg_store_find(&s->pg_store, id, out, &miss->error);
    if (rc != 0)
        out->len = had;
    return rc == -EIO ? -EAGAIN : rc;
}

int gw_store_read_receipt(struct gw_store *s, const char *id, size_t len, struct gw_buf *out,
                          struct gw_store_miss *miss)
{
    if (s->pg)
        return read_pg(s, id, out, miss);
    struct gw_idem_ref ref;
    int rc = gw_idem_find(&s->idem, id, len, &ref);
    if (rc == -EIO)
        return -EUCLEAN;
    return rc != 0 ? -ENOENT : gw_store_read_ref(s, ref, out, miss);
}

int gw_store_feed_read(struct gw_store *s, uint64_t after, size_t max, gw_feed_visit_fn visit,
                       void *ctx, struct gw_feed_mark *pos, uint64_t *last,
                       struct gw_store_miss *miss)
{
    if (s->pg) {
        int rc = gw_pg_feed_read(&s->pg_store, after, max, visit, ctx, last, &miss->error);
        return rc == -EIO ? -EAGAIN : rc;
    }
    struct gw_feed_fault fault = {0};
    int rc = gw_feed_read(&s->feed, after, visit, ctx, pos, last, &fault);
    miss->earliest = fault.earliest;
    miss->segment = fault.segment;
    miss->line = fault.offset;
    miss->seq = fault.seq;
    return rc;
}

uint64_t gw_store_feed_head(struct gw_store *s)
{
    return s->pg ? UINT64_MAX : gw_feed_watch_head(&s->watch);
}

const char *gw_store_damage_what(int rc)
{
    return rc == -EILSEQ ? "the line at the index's position is not that record's"
                         : gw_record_fault(rc);
}

void gw_store_segment_file(struct gw_store *s, uint64_t segment, char *file)
{
    if (segment == atomic_load(&s->journal.segment))
        snprintf(file, GW_SEGMENT_NAME_MAX, "%s", GW_JOURNAL_FILE);
    else
        gw_segment_name(file, segment);
}
