/* The PostgreSQL store's writer: every queued receipt in one transaction of this replica's own
 * (docs/journal.md §10). One round trip: BEGIN, the new receipts inserted with no seq and the
 * tallies they add to the totals, ON CONFLICT (batch_id) DO NOTHING, and COMMIT. No row the
 * other replicas write is touched, so their transactions commit side by side; the database's
 * primary key decides exactly-once (a concurrent insert of the same batch_id waits for the first
 * and is skipped). The sequencer gives seqs afterwards (pg_sequencer.c). Nothing is answered
 * before COMMIT. */
#include "pg_store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fnv.h"
#include "timing.h"

#define RECEIPT_COLUMNS 11
#define ROWS_PER_INSERT 5000 /* RECEIPT_COLUMNS parameters a row, under libpq's 65535 */

/* A batch_id met in this group: its first item's. */
struct seen {
    const char *batch_id;
    struct gw_commit_item *first;
};

/* The text parameters of one new receipt's row that are not the item's own strings. */
struct row_text {
    char hex[2 * GW_FINGERPRINT_LEN + 1];
    char digest[GW_PG_DIGEST_TEXT]; /* receipt_sha256 (pg_receipt.c) */
    char bits[24];
    struct gw_buf tally[5]; /* array literals: shard, weight, capacity, received, load */
};

struct group {
    struct gw_commit_item *list;
    size_t n;
    struct seen *table; /* open addressing, `mask + 1` slots */
    size_t mask;
    struct row_text *rows; /* per item; filled for the first item of each batch_id */
    const char **params;
    struct gw_pg_stmt *steps; /* the pipeline (steps_sql: the INSERTs' texts) */
    struct gw_buf *steps_sql;
    PGresult **inserted; /* per INSERT: the batch_ids it inserted */
    size_t nsteps, steps_cap, ninserts;
    size_t fresh; /* items new in this group */
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
    g->rows = calloc(g->n, sizeof(*g->rows));
    g->params = calloc(g->n * RECEIPT_COLUMNS + 1, sizeof(*g->params));
    g->inserted = calloc(g->n / ROWS_PER_INSERT + 1, sizeof(*g->inserted));
    return g->table && g->rows && g->params && g->inserted ? 0 : -ENOMEM;
}

/* Forgets an attempt's pipeline, so the transaction can be laid out again. */
static void attempt_reset(struct group *g)
{
    for (size_t i = 0; g->rows && i < g->n; i++)
        for (int k = 0; k < 5; k++)
            gw_buf_free(&g->rows[i].tally[k]);
    for (size_t i = 0; g->inserted && i < g->ninserts; i++) {
        PQclear(g->inserted[i]);
        g->inserted[i] = NULL;
    }
    for (size_t i = 0; i < g->nsteps; i++)
        gw_buf_free(&g->steps_sql[i]);
    if (g->table)
        memset(g->table, 0, (g->mask + 1) * sizeof(*g->table));
    g->nsteps = g->ninserts = g->fresh = 0;
}

static void group_free(struct group *g)
{
    attempt_reset(g);
    free(g->table);
    free(g->rows);
    free(g->params);
    free(g->inserted);
    free(g->steps);
    free(g->steps_sql);
}

/* Appends a step; `sql` (may be NULL: static text in `text`) is taken over. -ENOMEM. */
static int add_step(struct group *g, struct gw_buf *sql, const char *text, int nparams,
                    const char *const *params, PGresult **result)
{
    if (g->nsteps == g->steps_cap) {
        size_t cap = g->steps_cap ? 2 * g->steps_cap : 8;
        struct gw_pg_stmt *steps = realloc(g->steps, cap * sizeof(*steps));
        if (!steps)
            return -ENOMEM;
        g->steps = steps;
        struct gw_buf *texts = realloc(g->steps_sql, cap * sizeof(*texts));
        if (!texts)
            return -ENOMEM;
        g->steps_sql = texts;
        g->steps_cap = cap;
    }
    struct gw_buf *own = &g->steps_sql[g->nsteps];
    gw_buf_init(own);
    if (sql)
        *own = *sql; /* its data moves; steps[].sql is set when the pipeline is sent */
    g->steps[g->nsteps++] = (struct gw_pg_stmt){text, nparams, params, result};
    return 0;
}

/* The receipt's tallies as array literals: one element per shard it placed changes on. Ids are
 * [A-Za-z0-9._:-] (docs/contract.md §2): quoted, they need no escaping. */
static int tally_arrays(struct row_text *r, const struct gw_commit_item *it)
{
    for (int k = 0; k < 5; k++) {
        gw_buf_init(&r->tally[k]);
        gw_buf_puts(&r->tally[k], "{");
    }
    int first = 1;
    for (size_t i = 0; i < it->members->count; i++) {
        if (it->tally[i].received == 0)
            continue;
        const struct gw_shard *sh = &it->members->shards[i];
        const char *sep = first ? "" : ",";
        gw_buf_printf(&r->tally[0], "%s\"%s\"", sep, sh->id);
        gw_buf_printf(&r->tally[1], "%s%" PRIu64, sep, (uint64_t)sh->weight);
        gw_buf_printf(&r->tally[2], "%s%" PRIu64, sep, (uint64_t)sh->capacity);
        gw_buf_puts(&r->tally[3], sep);
        gw_buf_u128(&r->tally[3], it->tally[i].received);
        gw_buf_puts(&r->tally[4], sep);
        gw_buf_u128(&r->tally[4], it->tally[i].load);
        first = 0;
    }
    int failed = 0;
    for (int k = 0; k < 5; k++) {
        gw_buf_append(&r->tally[k], "}", 2); /* and the NUL libpq reads */
        failed |= r->tally[k].failed;
    }
    return failed ? -ENOMEM : 0;
}

/* The row parameters of each item that is the first of its batch_id in the group; a later item
 * with the same id is decided after the transaction, from the first one's outcome. */
static int row_params(struct group *g)
{
    size_t i = 0;
    const char **p = g->params;
    for (struct gw_commit_item *it = g->list; it; it = it->next, i++) {
        struct seen *s = slot_of(g, it->batch_id);
        if (s->batch_id)
            continue;
        *s = (struct seen){it->batch_id, it};
        struct row_text *r = &g->rows[i];
        gw_hex_encode(it->fingerprint, GW_FINGERPRINT_LEN, r->hex);
        snprintf(r->bits, sizeof(r->bits), "%" PRId64, (int64_t)it->shard_bits);
        if (tally_arrays(r, it) != 0)
            return -ENOMEM;
        gw_pg_receipt_digest(it->receipt, it->receipt_len, r->digest);
        const char *row[RECEIPT_COLUMNS] = {it->batch_id,     r->hex,           it->epoch,
                                            it->receipt,      r->digest,        r->bits,
                                            r->tally[0].data, r->tally[1].data, r->tally[2].data,
                                            r->tally[3].data, r->tally[4].data};
        memcpy(p, row, sizeof(row));
        p += RECEIPT_COLUMNS;
        g->fresh++;
    }
    return 0;
}

/* INSERT ... VALUES (...),(...) ON CONFLICT (batch_id) DO NOTHING RETURNING batch_id, in
 * statements of at most ROWS_PER_INSERT rows. */
static int insert_steps(struct group *g)
{
    int rc = 0;
    for (size_t done = 0; rc == 0 && done < g->fresh; done += ROWS_PER_INSERT) {
        size_t rows = g->fresh - done < ROWS_PER_INSERT ? g->fresh - done : ROWS_PER_INSERT;
        struct gw_buf sql;
        gw_buf_init(&sql);
        gw_buf_puts(&sql, "INSERT INTO shardgate_receipts (batch_id, fingerprint, epoch, receipt, "
                          "receipt_sha256, shard_bits, tally_shard, tally_weight, tally_capacity, "
                          "tally_received, tally_load)");
        for (size_t r = 0; r < rows; r++)
            for (int k = 0; k < RECEIPT_COLUMNS; k++) {
                gw_buf_puts(&sql, k ? ",$" : r ? "),($" : " VALUES ($");
                gw_buf_field_u64(&sql, "", r * RECEIPT_COLUMNS + (size_t)k + 1);
            }
        gw_buf_puts(&sql, ") ON CONFLICT (batch_id) DO NOTHING RETURNING batch_id");
        gw_buf_append(&sql, "", 1); /* libpq reads a C string; a gw_buf has no NUL of its own */
        rc = sql.failed ? -ENOMEM
                        : add_step(g, &sql, NULL, (int)(rows * RECEIPT_COLUMNS),
                                   g->params + done * RECEIPT_COLUMNS, &g->inserted[g->ninserts++]);
        if (rc != 0)
            gw_buf_free(&sql);
    }
    return rc;
}

/* The one round trip: BEGIN, the INSERTs, COMMIT. Laid out anew each attempt. */
static int insert_and_commit(struct gw_pg_conn *c, void *ctx, struct gw_error *err)
{
    struct group *g = ctx;
    attempt_reset(g);
    int rc = row_params(g);
    if (rc == 0)
        rc = add_step(g, NULL, "BEGIN", 0, NULL, NULL);
    if (rc == 0)
        rc = insert_steps(g);
    if (rc == 0)
        rc = add_step(g, NULL, "COMMIT", 0, NULL, NULL);
    if (rc != 0) {
        gw_error_set(err, "", "store: out of memory");
        return rc;
    }
    for (size_t i = 0; i < g->nsteps; i++)
        if (g->steps_sql[i].data)
            g->steps[i].sql = g->steps_sql[i].data;
    rc = gw_pg_pipeline(c, g->steps, g->nsteps, err);
    if (rc != 0 && c->conn) {
        struct gw_error ignored;
        gw_pg_run(c, "ROLLBACK", &ignored);
    }
    return rc;
}

/* The first items whose rows the INSERTs inserted are NEW; the others (their batch_id was
 * committed before, by this replica or another) keep REUSED until read_stored finds their
 * fingerprint in the stored row. */
static void mark_new(struct group *g)
{
    for (size_t k = 0; k < g->ninserts; k++)
        for (int row = 0; row < PQntuples(g->inserted[k]); row++)
            slot_of(g, PQgetvalue(g->inserted[k], row, 0))->first->verdict = GW_COMMIT_NEW;
}

/* Reads the stored rows of the skipped ids: same fingerprint replays, another is reused. */
static int read_stored(struct gw_pg_conn *c, struct group *g, struct gw_error *err)
{
    struct gw_buf ids;
    gw_buf_init(&ids);
    gw_buf_puts(&ids, "{");
    size_t skipped = 0;
    for (size_t i = 0; i <= g->mask; i++) {
        struct gw_commit_item *it = g->table[i].first;
        if (!it || it->verdict == GW_COMMIT_NEW)
            continue;
        gw_buf_puts(&ids, skipped++ ? ",\"" : "\"");
        gw_buf_puts(&ids, it->batch_id);
        gw_buf_puts(&ids, "\"");
    }
    gw_buf_append(&ids, "}", 2);
    if (skipped == 0 || ids.failed) {
        gw_buf_free(&ids);
        return ids.failed ? -ENOMEM : 0;
    }
    const char *params[] = {ids.data};
    PGresult *res = gw_pg_exec(c,
                               "SELECT batch_id, fingerprint, receipt, encode(receipt_sha256, "
                               "'hex') FROM shardgate_receipts WHERE batch_id = ANY ($1::text[])",
                               1, params, err);
    gw_buf_free(&ids);
    if (!res)
        return -EIO;
    for (int row = 0; row < PQntuples(res); row++) {
        struct gw_commit_item *it = slot_of(g, PQgetvalue(res, row, 0))->first;
        char hex[2 * GW_FINGERPRINT_LEN + 1];
        gw_hex_encode(it->fingerprint, GW_FINGERPRINT_LEN, hex);
        if (strcmp(PQgetvalue(res, row, 1), hex) != 0)
            continue; /* REUSED */
        const char *damage =
            gw_pg_receipt_damage(it->batch_id, PQgetvalue(res, row, 2),
                                 (size_t)PQgetlength(res, row, 2), PQgetvalue(res, row, 3));
        it->verdict = damage ? GW_COMMIT_DAMAGED : GW_COMMIT_REPLAY;
        if (damage) {
            gw_pg_receipt_refused(it->batch_id, damage, it->damage);
            continue;
        }
        /* its own receipt is not needed any more */
        gw_buf_reset(it->stored);
        gw_buf_append(it->stored, PQgetvalue(res, row, 2), (size_t)PQgetlength(res, row, 2));
    }
    PQclear(res);
    return 0;
}

/* A later item with the batch_id of an earlier one in the group: the first one's row decides. */
static void decide_repeats(struct group *g)
{
    for (struct gw_commit_item *it = g->list; it; it = it->next) {
        struct gw_commit_item *first = slot_of(g, it->batch_id)->first;
        if (first == it)
            continue;
        if (memcmp(first->fingerprint, it->fingerprint, GW_FINGERPRINT_LEN) != 0 ||
            first->verdict == GW_COMMIT_REUSED || first->verdict == GW_COMMIT_DAMAGED) {
            it->verdict = first->verdict == GW_COMMIT_DAMAGED ? first->verdict : GW_COMMIT_REUSED;
            if (it->verdict == GW_COMMIT_DAMAGED)
                *it->damage = *first->damage;
            continue;
        }
        it->verdict = GW_COMMIT_REPLAY;
        gw_buf_reset(it->stored);
        if (first->verdict == GW_COMMIT_REPLAY)
            gw_buf_append(it->stored, first->stored->data, first->stored->len);
        else
            gw_buf_append(it->stored, first->receipt, first->receipt_len);
    }
}

/* One transaction for the group, then the verdicts. A connection found dead (the database
 * restarted since the last commit) runs the transaction once more on a new one (gw_pg_once_more):
 * the primary key makes that safe, since a row the first attempt may have committed is skipped
 * and read back as stored before: a replay (docs/journal.md §10, Availability). Returns 0 once
 * COMMIT returned, else a negative code (rolled back, or the connection lost again: the outcome is
 * unknown to this replica, and the client's retry learns it as a replay or a first commit). */
static int transact(struct gw_pg_store *s, struct group *g, struct gw_error *err)
{
    struct gw_pg_conn *c = &s->writer;
    for (struct gw_commit_item *it = g->list; it; it = it->next)
        it->verdict = GW_COMMIT_REUSED;
    int rc = gw_pg_once_more(c, insert_and_commit, g, err);
    if (rc == 0) {
        mark_new(g);
        rc = read_stored(c, g, err);
    }
    if (rc == 0)
        decide_repeats(g);
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
    if (rc == 0 && g.fresh)
        gw_pg_sequencer_poke(s); /* the new rows wait for their seqs */
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

static void *writer_main(void *arg)
{
    struct gw_pg_store *s = arg;
    pthread_mutex_lock(&s->worker.lock);
    for (;;) {
        int idle = 0;
        while (!s->head && !s->worker.stopping && !(idle = gw_worker_wait_ms(&s->worker, 1000)))
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
