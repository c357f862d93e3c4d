/* The PostgreSQL store's writer: every queued receipt in one transaction (docs/journal.md §10).
 * The transaction locks the sequencer row first, so transactions of all replicas commit one at
 * a time and seqs follow commit order without gaps; it then learns which batch_ids are already
 * stored, inserts the new receipts and adds their totals. Nothing is answered before COMMIT. */
#include "pg_store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fnv.h"
#include "timing.h"

#define ROWS_PER_INSERT 8000 /* 6 parameters a row, under libpq's 65535 */

/* A batch_id seen in this group: a stored row's, or an earlier item's of the group. */
struct seen {
    const char *batch_id;
    const char *fingerprint; /* hex */
    const char *receipt;
    size_t receipt_len;
};

struct group {
    struct gw_commit_item *list;
    size_t n;
    struct seen *table; /* open addressing, `mask + 1` slots */
    size_t mask;
    char (*hex)[2 * GW_FINGERPRINT_LEN + 1]; /* each item's fingerprint */
    char (*seq)[24];                         /* each new item's seq */
    PGresult *locked, *stored;               /* the sequencer row; the group's ids already stored */
    struct gw_pg_stmt *steps; /* the writes of the second round trip (steps_sql: their text) */
    struct gw_buf *steps_sql;
    size_t nsteps, steps_cap;
    const char **receipt_params, **total_params;
    char (*numbers)[4][48]; /* the totals rows' weight, capacity, received, load */
    char seq_text[24], note[48];
    const char *seq_param[1], *note_param[1];
    uint64_t last_seq;   /* the sequencer's, then after this group */
    size_t fresh;        /* items new in this group */
    uint64_t shard_bits; /* of the new items (feed_watch.h) */
};

static struct seen *slot_of(struct group *g, const char *batch_id)
{
    size_t i = (size_t)gw_fnv1a(batch_id, strlen(batch_id)) & g->mask;
    while (g->table[i].batch_id && strcmp(g->table[i].batch_id, batch_id) != 0)
        i = (i + 1) & g->mask;
    return &g->table[i];
}

static int group_init(struct group *g, struct gw_commit_item *list)
{
    memset(g, 0, sizeof(*g));
    g->list = list;
    for (struct gw_commit_item *it = list; it; it = it->next)
        g->n++;
    size_t slots = 16;
    while (slots < 2 * g->n)
        slots *= 2;
    g->mask = slots - 1;
    g->table = calloc(slots, sizeof(*g->table));
    g->hex = calloc(g->n, sizeof(*g->hex));
    g->seq = calloc(g->n, sizeof(*g->seq));
    return g->table && g->hex && g->seq ? 0 : -ENOMEM;
}

static void group_free(struct group *g)
{
    free(g->table);
    free(g->hex);
    free(g->seq);
    PQclear(g->locked);
    PQclear(g->stored);
    for (size_t i = 0; i < g->nsteps; i++)
        gw_buf_free(&g->steps_sql[i]);
    free(g->steps);
    free(g->steps_sql);
    free(g->receipt_params);
    free(g->total_params);
    free(g->numbers);
}

/* Appends a step; `sql` (may be NULL: static text in `text`) is taken over. -ENOMEM. */
static int add_step(struct group *g, struct gw_buf *sql, const char *text, int nparams,
                    const char *const *params)
{
    if (g->nsteps == g->steps_cap) {
        size_t cap = g->steps_cap ? 2 * g->steps_cap : 8;
        struct gw_pg_stmt *steps = realloc(g->steps, cap * sizeof(*steps));
        struct gw_buf *texts = steps ? realloc(g->steps_sql, cap * sizeof(*texts)) : NULL;
        g->steps = steps ? steps : g->steps;
        g->steps_sql = texts ? texts : g->steps_sql;
        if (!texts)
            return -ENOMEM;
        g->steps_cap = cap;
    }
    struct gw_buf *own = &g->steps_sql[g->nsteps];
    gw_buf_init(own);
    if (sql)
        *own = *sql; /* its data moves; steps[].sql is set when the pipeline is sent */
    g->steps[g->nsteps++] = (struct gw_pg_stmt){text, nparams, params, NULL};
    return 0;
}

/* The first round trip: BEGIN, the sequencer row locked until COMMIT (the one order of every
 * replica's commits), and the group's batch_ids already stored, into the table. Ids are
 * [A-Za-z0-9._:-] (docs/api.md §2), so the array literal needs no escaping beyond its quotes. */
static int lock_and_find(struct gw_pg_conn *c, struct group *g, struct gw_error *err)
{
    struct gw_buf ids;
    gw_buf_init(&ids);
    gw_buf_puts(&ids, "{");
    for (struct gw_commit_item *it = g->list; it; it = it->next) {
        gw_buf_puts(&ids, it == g->list ? "\"" : ",\"");
        gw_buf_puts(&ids, it->batch_id);
        gw_buf_puts(&ids, "\"");
    }
    gw_buf_puts(&ids, "}");
    gw_buf_append(&ids, "", 1); /* libpq reads a C string; a gw_buf has no NUL of its own */
    const char *params[] = {ids.data};
    const struct gw_pg_stmt stmts[] = {
        {"BEGIN", 0, NULL, NULL},
        {"SELECT last_seq FROM shardgate_sequencer FOR UPDATE", 0, NULL, &g->locked},
        {"SELECT batch_id, fingerprint, receipt FROM shardgate_receipts WHERE batch_id = ANY "
         "($1::text[])",
         1, params, &g->stored}};
    int rc = ids.failed ? -ENOMEM : gw_pg_pipeline(c, stmts, 3, err);
    gw_buf_free(&ids);
    if (rc == -ENOMEM)
        gw_error_set(err, "", "store: out of memory");
    if (rc != 0)
        return rc;
    g->last_seq = strtoull(PQgetvalue(g->locked, 0, 0), NULL, 10);
    for (int row = 0; row < PQntuples(g->stored); row++) {
        struct seen *e = slot_of(g, PQgetvalue(g->stored, row, 0));
        *e = (struct seen){PQgetvalue(g->stored, row, 0), PQgetvalue(g->stored, row, 1),
                           PQgetvalue(g->stored, row, 2), (size_t)PQgetlength(g->stored, row, 2)};
    }
    return 0;
}

/* Each item's verdict, in queue order: an id stored before, or earlier in this group, replays
 * (same fingerprint) or is reused (another); the rest get the next seqs. */
static void decide(struct group *g)
{
    size_t i = 0;
    for (struct gw_commit_item *it = g->list; it; it = it->next, i++) {
        gw_hex_encode(it->fingerprint, GW_FINGERPRINT_LEN, g->hex[i]);
        struct seen *s = slot_of(g, it->batch_id);
        if (!s->batch_id) {
            *s = (struct seen){it->batch_id, g->hex[i], it->receipt, it->receipt_len};
            it->verdict = GW_COMMIT_NEW;
            it->seq = ++g->last_seq;
            snprintf(g->seq[i], sizeof(g->seq[i]), "%" PRIu64, it->seq);
            g->fresh++;
            g->shard_bits |= it->shard_bits;
        } else if (strcmp(s->fingerprint, g->hex[i]) == 0) {
            it->verdict = GW_COMMIT_REPLAY; /* its own receipt is not needed any more */
            gw_buf_reset(it->stored);
            gw_buf_append(it->stored, s->receipt, s->receipt_len);
        } else {
            it->verdict = GW_COMMIT_REUSED;
        }
    }
}

/* Steps INSERT `head` VALUES (...),(...) `tail` over nrows rows of ncols text parameters, in
 * statements of at most ROWS_PER_INSERT rows. */
static int insert_rows(struct group *g, const char *head, const char *tail, int ncols, size_t nrows,
                       const char **params)
{
    int rc = 0;
    for (size_t done = 0; rc == 0 && done < nrows; done += ROWS_PER_INSERT) {
        size_t rows = nrows - done < ROWS_PER_INSERT ? nrows - done : ROWS_PER_INSERT;
        struct gw_buf sql;
        gw_buf_init(&sql);
        gw_buf_puts(&sql, head);
        for (size_t r = 0; r < rows; r++)
            for (int k = 0; k < ncols; k++) {
                gw_buf_puts(&sql, k ? ",$" : r ? "),($" : " VALUES ($");
                gw_buf_field_u64(&sql, "", r * (size_t)ncols + (size_t)k + 1);
            }
        gw_buf_puts(&sql, ") ");
        gw_buf_puts(&sql, tail);
        gw_buf_append(&sql, "", 1); /* libpq reads a C string; a gw_buf has no NUL of its own */
        rc = sql.failed ? -ENOMEM
                        : add_step(g, &sql, NULL, (int)(rows * (size_t)ncols),
                                   params + done * (size_t)ncols);
        if (rc != 0)
            gw_buf_free(&sql);
    }
    return rc;
}

static int insert_receipts(struct group *g)
{
    const char **params = g->receipt_params = calloc(g->fresh * 5 + 1, sizeof(*params));
    if (!params)
        return -ENOMEM;
    size_t i = 0, p = 0;
    for (struct gw_commit_item *it = g->list; it; it = it->next, i++) {
        if (it->verdict != GW_COMMIT_NEW)
            continue;
        params[p++] = it->batch_id;
        params[p++] = g->seq[i];
        params[p++] = g->hex[i];
        params[p++] = it->epoch;
        params[p++] = it->receipt; /* NUL-terminated: the request's buffer */
    }
    return insert_rows(g,
                       "INSERT INTO shardgate_receipts (batch_id, seq, fingerprint, epoch, "
                       "receipt)",
                       "", 5, g->fresh, params);
}

/* The group's totals per epoch and shard (docs/api.md §7). A group nearly always has one
 * epoch; each distinct membership gets one array of sums. */
struct epoch_sums {
    const struct gw_membership *members;
    const char *epoch;
    gw_u128 *received, *load;
};

static struct epoch_sums *sums_for(struct epoch_sums **all, size_t *n,
                                   const struct gw_commit_item *it)
{
    for (size_t i = 0; i < *n; i++)
        if ((*all)[i].members == it->members)
            return &(*all)[i];
    struct epoch_sums *grown = realloc(*all, (*n + 1) * sizeof(**all));
    if (!grown)
        return NULL;
    *all = grown;
    struct epoch_sums *e = &grown[(*n)++];
    size_t count = it->members->count ? it->members->count : 1;
    *e = (struct epoch_sums){it->members, it->epoch, calloc(count, sizeof(gw_u128)),
                             calloc(count, sizeof(gw_u128))};
    return e->received && e->load ? e : NULL;
}

/* Text parameters of the totals rows: epoch, shard, weight, capacity, received, load. */
struct total_rows {
    const char **params;
    char (*numbers)[4][48];
    size_t rows, cap;
};

static void u128_text(char out[48], gw_u128 v)
{
    struct gw_buf b;
    gw_buf_init(&b);
    gw_buf_u128(&b, v);
    snprintf(out, 48, "%.*s", b.failed ? 1 : (int)b.len, b.failed ? "0" : b.data);
    gw_buf_free(&b);
}

static int total_rows_of(const struct epoch_sums *all, size_t n, struct total_rows *t)
{
    for (size_t e = 0; e < n; e++)
        t->cap += all[e].members->count;
    t->params = calloc(t->cap * 6 + 1, sizeof(*t->params));
    t->numbers = calloc(t->cap + 1, sizeof(*t->numbers));
    if (!t->params || !t->numbers)
        return -ENOMEM;
    for (size_t e = 0; e < n; e++)
        for (size_t i = 0; i < all[e].members->count; i++) {
            if (all[e].received[i] == 0)
                continue;
            const struct gw_shard *sh = &all[e].members->shards[i];
            char(*num)[48] = t->numbers[t->rows];
            snprintf(num[0], 48, "%" PRIu64, (uint64_t)sh->weight);
            snprintf(num[1], 48, "%" PRIu64, (uint64_t)sh->capacity);
            u128_text(num[2], all[e].received[i]);
            u128_text(num[3], all[e].load[i]);
            const char **p = t->params + t->rows++ * 6;
            p[0] = all[e].epoch;
            p[1] = sh->id;
            p[2] = num[0];
            p[3] = num[1];
            p[4] = num[2];
            p[5] = num[3];
        }
    return 0;
}

static int add_totals(struct group *g)
{
    struct epoch_sums *all = NULL;
    size_t n = 0;
    int rc = 0;
    for (struct gw_commit_item *it = g->list; rc == 0 && it; it = it->next) {
        if (it->verdict != GW_COMMIT_NEW)
            continue;
        struct epoch_sums *e = sums_for(&all, &n, it);
        for (size_t i = 0; e && i < it->members->count; i++) {
            e->received[i] += it->tally[i].received;
            e->load[i] += it->tally[i].load;
        }
        rc = e ? 0 : -ENOMEM;
    }
    struct total_rows t = {0};
    if (rc == 0)
        rc = total_rows_of(all, n, &t);
    g->total_params = t.params; /* the steps point into them until the group is freed */
    g->numbers = t.numbers;
    if (rc == 0)
        rc = insert_rows(g,
                         "INSERT INTO shardgate_totals (epoch, shard, weight, capacity, received, "
                         "load)",
                         "ON CONFLICT (epoch, shard) DO UPDATE SET received = "
                         "shardgate_totals.received + EXCLUDED.received, load = "
                         "shardgate_totals.load + EXCLUDED.load",
                         6, t.rows, t.params);
    for (size_t e = 0; e < n; e++) {
        free(all[e].received);
        free(all[e].load);
    }
    free(all);
    return rc;
}

/* The new last seq, and the NOTIFY "<last_seq> <shard_bits>" that wakes the other replicas'
 * feed watchers at COMMIT (docs/journal.md §10). */
static int advance_sequencer(struct group *g)
{
    snprintf(g->seq_text, sizeof(g->seq_text), "%" PRIu64, g->last_seq);
    snprintf(g->note, sizeof(g->note), "%" PRIu64 " %" PRIu64, g->last_seq, g->shard_bits);
    g->seq_param[0] = g->seq_text;
    g->note_param[0] = g->note;
    int rc = add_step(g, NULL, "UPDATE shardgate_sequencer SET last_seq = $1", 1, g->seq_param);
    return rc ? rc
              : add_step(g, NULL, "SELECT pg_notify('shardgate_receipts', $1)", 1, g->note_param);
}

/* The second round trip: the new receipts, their totals, the sequencer and the NOTIFY, then
 * COMMIT (alone when nothing is new). */
static int write_and_commit(struct gw_pg_conn *c, struct group *g, struct gw_error *err)
{
    int rc = 0;
    if (g->fresh && (rc = insert_receipts(g)) == 0 && (rc = add_totals(g)) == 0)
        rc = advance_sequencer(g);
    if (rc == 0)
        rc = add_step(g, NULL, "COMMIT", 0, NULL);
    if (rc != 0) {
        gw_error_set(err, "", "store: out of memory");
        return rc;
    }
    for (size_t i = 0; i < g->nsteps; i++)
        if (g->steps_sql[i].data)
            g->steps[i].sql = g->steps_sql[i].data;
    return gw_pg_pipeline(c, g->steps, g->nsteps, err);
}

/* BEGIN, the lock and the ids: the first round trip, which commits nothing, so it runs once
 * more on a new connection when it finds the old one dead (gw_pg_once_more): the first commit
 * after the database is back is not refused while /readyz says ready. */
static int begin_group(struct gw_pg_conn *c, void *ctx, struct gw_error *err)
{
    struct group *g = ctx;
    PQclear(g->locked);
    PQclear(g->stored);
    g->locked = g->stored = NULL;
    return lock_and_find(c, g, err);
}

/* One transaction for the group. Returns 0 once COMMIT returned, else a negative code (rolled
 * back, or the connection lost: then the outcome is unknown to this replica, and the client's
 * retry learns it as a replay or a first commit). */
static int transact(struct gw_pg_store *s, struct group *g, struct gw_error *err)
{
    struct gw_pg_conn *c = &s->writer;
    int rc = gw_pg_once_more(c, begin_group, g, err);
    if (rc == 0) {
        decide(g);
        rc = write_and_commit(c, g, err);
    }
    if (rc != 0 && c->conn) {
        struct gw_error ignored;
        gw_pg_run(c, "ROLLBACK", &ignored);
    }
    return rc;
}

static void commit_list(struct gw_pg_store *s, struct gw_commit_item *list)
{
    struct group g;
    struct gw_error err;
    uint64_t start = gw_now_ns();
    int rc = group_init(&g, list);
    if (rc == 0)
        rc = transact(s, &g, &err);
    else
        gw_error_set(&err, "", "store: out of memory");
    if (rc == 0)
        gw_metrics_commit(s->metrics, g.fresh, gw_now_ns() - start);
    if (rc == 0 && g.fresh && s->hook.durable)
        s->hook.durable(s->hook.ctx, g.last_seq, g.shard_bits);
    atomic_store(&s->available, rc == 0 || rc == -ENOMEM);
    if (rc != 0) {
        pthread_mutex_lock(&s->worker.lock);
        s->error = err;
        pthread_mutex_unlock(&s->worker.lock);
    }
    gw_commit_finish(list, rc == 0 ? 0 : -EIO);
    group_free(&g);
}

static int select_1(struct gw_pg_conn *c, void *ctx, struct gw_error *err)
{
    (void)ctx;
    return gw_pg_run(c, "SELECT 1", err);
}

/* Once a second without work: is the database there (for /readyz, docs/api.md §10)? A lost
 * connection is reopened here, so readiness comes back without a request; one found dead is
 * reopened at once (gw_pg_once_more), so the store is unavailable only while the database
 * cannot be reached. */
static void check_database(struct gw_pg_store *s)
{
    struct gw_error err;
    int rc = gw_pg_once_more(&s->writer, select_1, NULL, &err);
    atomic_store(&s->available, rc == 0);
    if (rc != 0) {
        pthread_mutex_lock(&s->worker.lock);
        s->error = err;
        pthread_mutex_unlock(&s->worker.lock);
    }
}

static int wait_a_second(struct gw_pg_store *s)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += 1;
    return pthread_cond_timedwait(&s->worker.wake, &s->worker.lock, &ts) == ETIMEDOUT;
}

static void *writer_main(void *arg)
{
    struct gw_pg_store *s = arg;
    pthread_mutex_lock(&s->worker.lock);
    for (;;) {
        int idle = 0;
        while (!s->head && !s->worker.stopping && !(idle = wait_a_second(s)))
            ;
        if (!s->head && s->worker.stopping)
            break;
        struct gw_commit_item *list = s->head;
        s->head = s->tail = NULL;
        pthread_mutex_unlock(&s->worker.lock);
        if (list) {
            if (s->delay_ms)
                gw_sleep_ms(s->delay_ms);
            commit_list(s, list);
        } else if (idle) {
            check_database(s);
        }
        pthread_mutex_lock(&s->worker.lock);
    }
    pthread_mutex_unlock(&s->worker.lock);
    return NULL;
}

int gw_pg_store_start_writer(struct gw_pg_store *s, struct gw_error *err)
{
    return gw_worker_start(&s->worker, writer_main, s, "store writer", err);
}

void gw_pg_store_submit(struct gw_pg_store *s, struct gw_commit_item *item)
{
    gw_commit_enqueue(&s->worker, &s->head, &s->tail, item);
}

void gw_pg_store_stop(struct gw_pg_store *s)
{
    gw_worker_join(&s->worker);
}
