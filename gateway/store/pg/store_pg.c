/* The face of the PostgreSQL store (docs/journal.md §10): every call of store.h on the database
 * every replica shares, its failures to reach it answered as -EAGAIN. */
#include "store.h"
#include "store_ops.h"
#include "store_state.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg_store.h"

/* What the database's store holds of its own (struct gw_store's impl). */
struct gw_store_pg {
    struct gw_pg_store pg;
    gw_epoch_fn publish; /* gw_store_options' */
    void *publish_ctx;
    pthread_mutex_t *publish_lock;
};

static struct gw_store_pg *db(struct gw_store *s)
{
    return s->impl;
}

/* The database's failures other than these are its being out of reach. */
static int pg_code(int rc)
{
    return rc == 0 || rc == -ESTALE || rc == -ENOMEM || rc == -EINVAL ? rc : -EAGAIN;
}

/* Every commit, this replica's or (by NOTIFY) another's: the feed's watchers learn of it. */
static void announce_commit(void *ctx, uint64_t last_seq, uint64_t shard_bits)
{
    struct gw_store *s = ctx;
    gw_feed_watch_durable(&s->watch, last_seq, shard_bits);
}

/* The listener's news: every epoch after ours, the newest published. */
static void follow(void *ctx, struct gw_pg_conn *c)
{
    struct gw_store *s = ctx;
    struct gw_error err;
    pthread_mutex_lock(db(s)->publish_lock);
    int rc = gw_pg_epochs_catch_up(&db(s)->pg, c, db(s)->publish, db(s)->publish_ctx, &err);
    pthread_mutex_unlock(db(s)->publish_lock);
    if (rc != 0 && rc != -EIO) {
        struct gw_buf f;
        gw_buf_init(&f);
        gw_log_str(&f, "epoch", "");
        gw_log_u64(&f, "epoch_seq", 0);
        gw_log_str(&f, "message", err.msg);
        gw_log_event("epoch_refused", &f);
    }
}

static int open_pg(struct gw_store *s, const struct gw_store_options *o, struct gw_topology *topo,
                   struct gw_metrics *metrics, struct gw_error *err)
{
    struct gw_pg_open po = {.url = o->url,
                            .read_url = o->read_url,
                            .topo = topo,
                            .adopt = o->adopt,
                            .adopt_ctx = o->adopt_ctx,
                            .metrics = metrics,
                            .delay_ms = o->commit_delay_ms,
                            .hook = {announce_commit, s}};
    int rc = gw_pg_store_open(&db(s)->pg, &po, err);
    if (rc == 0) {
        db(s)->publish = o->publish;
        db(s)->publish_ctx = o->publish_ctx;
        db(s)->publish_lock = o->publish_lock;
    }
    return rc == 0 || rc == -ENOMEM ? rc : -EINVAL;
}

/* The watch before the listener: it announces other replicas' commits to it. */
static int start_pg(struct gw_store *s, const struct gw_store_options *o,
                    struct gw_metrics *metrics, struct gw_error *err)
{
    (void)metrics;
    if (gw_feed_watch_start(&s->watch, db(s)->pg.start_seq, o->max_watchers) != 0) {
        gw_error_set(err, "", "shardgate: cannot start the feed's watch");
        return -ENOMEM;
    }
    return gw_pg_listener_start(&db(s)->pg, follow, s, err);
}

static void stop_pg(struct gw_store *s)
{
    gw_pg_store_stop(&db(s)->pg); /* commits what is queued */
}

static void close_pg(struct gw_store *s)
{
    gw_pg_store_close(&db(s)->pg);
    free(s->impl);
    s->impl = NULL;
}

static int writable_pg(struct gw_store *s)
{
    return gw_pg_store_available(&db(s)->pg);
}

static void refusal_pg(struct gw_store *s, struct gw_store_refusal *out)
{
    struct gw_pg_store *p = &db(s)->pg;
    out->code = "store_unavailable";
    out->retry = 1;
    pthread_mutex_lock(&p->worker.lock);
    gw_error_set(&out->error, "", "%s", p->error.msg[0] ? p->error.msg : "store: unavailable");
    pthread_mutex_unlock(&p->worker.lock);
}

static int claim_pg(struct gw_store *s, const char *id, size_t len,
                    const unsigned char *fingerprint, enum gw_commit_verdict *verdict,
                    struct gw_buf *stored, struct gw_store_miss *miss)
{
    (void)s, (void)id, (void)len, (void)fingerprint, (void)stored, (void)miss;
    *verdict = GW_COMMIT_NEW; /* the store's transaction decides (docs/journal.md §10) */
    return 0;
}

static void release_pg(struct gw_store *s, const char *id, size_t len)
{
    (void)s, (void)id, (void)len; /* nothing was claimed */
}

static void submit_pg(struct gw_store *s, struct gw_commit_item *item)
{
    gw_pg_store_submit(&db(s)->pg, item); /* the database holds the id and the totals */
}

static int read_receipt_pg(struct gw_store *s, const char *id, size_t len, struct gw_buf *out,
                           struct gw_store_miss *miss)
{
    (void)len;
    size_t had = out->len;
    int rc = gw_pg_store_find(&db(s)->pg, id, out, &miss->error);
    if (rc != 0)
        out->len = had;
    return rc == -EIO ? -EAGAIN : rc;
}

static int feed_read_pg(struct gw_store *s, uint64_t after, size_t max, gw_feed_visit_fn visit,
                        void *ctx, struct gw_feed_mark *pos, uint64_t *last,
                        struct gw_store_miss *miss)
{
    (void)pos;
    int rc = gw_pg_feed_read(&db(s)->pg, after, max, visit, ctx, last, &miss->error);
    return rc == -EIO ? -EAGAIN : rc;
}

/* Another replica's receipts may be announced here late: no cursor is past the head. */
static uint64_t feed_head_pg(struct gw_store *s)
{
    (void)s;
    return UINT64_MAX;
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
    int rc = gw_pg_store_totals(&db(s)->pg, &all, &n, err);
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

static int member_totals_pg(struct gw_store *s, const struct gw_membership *m, const size_t *slots,
                            struct gw_total *out, struct gw_error *err)
{
    (void)slots;
    struct gw_ledger_entry *all = NULL;
    size_t n = 0;
    int rc = gw_pg_store_totals(&db(s)->pg, &all, &n, err);
    for (size_t i = 0; rc == 0 && i < m->count; i++) {
        const struct gw_ledger_entry *e = entry_of(all, n, &m->shards[i]);
        out[i] = e ? e->total : (struct gw_total){0, 0};
    }
    free(all);
    return rc == -EIO ? -EAGAIN : rc;
}

static int record_epoch_pg(struct gw_store *s, const struct gw_topology *next,
                           enum gw_epoch_source source, const char *base,
                           struct gw_epoch_entry *entry, struct gw_error *err)
{
    return pg_code(gw_pg_epoch_record(&db(s)->pg, next, source, base, entry, err));
}

static int catch_up_pg(struct gw_store *s, gw_epoch_fn apply, void *ctx, struct gw_error *err)
{
    return pg_code(gw_pg_store_catch_up(&db(s)->pg, apply, ctx, err));
}

/* The database's rows are named by their table: it has no journal lines or segment files. */
static const char *damage_what_pg(int rc)
{
    (void)rc;
    return "the row fails its check";
}

static void segment_file_pg(struct gw_store *s, uint64_t segment, char *file)
{
    (void)s, (void)segment;
    snprintf(file, GW_STORE_FILE_NAME_MAX, "%s", "shardgate_receipts");
}

static struct gw_epoch_chain *chain_pg(struct gw_store *s)
{
    return &db(s)->pg.chain;
}

static int epoch_record_pg(struct gw_store *s, const struct gw_epoch_entry *e, struct gw_buf *out,
                           struct gw_error *err)
{
    int rc = gw_pg_epoch_record_read(&db(s)->pg, e, out, err);
    return rc == -EIO ? -EAGAIN : rc;
}

const struct gw_store_ops gw_store_pg_ops = {
    .check_name = "store",
    .holds_membership = 1,
    .damage_what = damage_what_pg,
    .segment_file = segment_file_pg,
    .start = start_pg,
    .stop = stop_pg,
    .close = close_pg,
    .writable = writable_pg,
    .refusal = refusal_pg,
    .claim = claim_pg,
    .release = release_pg,
    .submit = submit_pg,
    .read_receipt = read_receipt_pg,
    .feed_read = feed_read_pg,
    .feed_head = feed_head_pg,
    .shard_totals = pg_shard_totals,
    .member_totals = member_totals_pg,
    .record_epoch = record_epoch_pg,
    .catch_up = catch_up_pg,
    .chain = chain_pg,
    .epoch_record = epoch_record_pg,
};

int gw_store_open_pg(struct gw_store *s, const struct gw_store_options *o, struct gw_topology *topo,
                     struct gw_metrics *metrics, struct gw_error *err)
{
    s->impl = calloc(1, sizeof(struct gw_store_pg));
    if (!s->impl) {
        gw_error_set(err, "", "out of memory");
        return -ENOMEM;
    }
    int rc = open_pg(s, o, topo, metrics, err);
    if (rc == 0) {
        s->ops = &gw_store_pg_ops;
    } else {
        free(s->impl); /* a failed open leaves nothing open */
        s->impl = NULL;
    }
    return rc;
}
