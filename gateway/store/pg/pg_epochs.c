/* The epoch chain of --store postgres (docs/journal.md §10): shardgate_epochs holds the epoch
 * record lines of docs/journal.md §2, read back under the journal's own chain rules. The
 * database is where the membership lives: a replica starts on its latest epoch, records a change
 * there, and follows the others' changes (pg_listen.c). */
#include "pg_store.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "records.h"
#include "ring.h"

/* One epoch row through the chain rules, appended to the chain. */
static int replay_row(struct gw_pg_store *s, PGresult *res, int row, struct gw_contract *c,
                      struct gw_membership *m, struct gw_epoch_entry *e, struct gw_error *err)
{
    const char *line = PQgetvalue(res, row, 0);
    size_t len = (size_t)PQgetlength(res, row, 0);
    uint64_t first_seq = strtoull(PQgetvalue(res, row, 1), NULL, 10);
    json_error_t jerr;
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    int rc = root ? gw_epoch_record_replay(root, line, len, &s->chain, first_seq - 1, e, m, c, err)
                  : -EINVAL;
    if (!root)
        gw_error_set(err, "", "%s", jerr.text);
    json_decref(root);
    if (rc == 0 && (rc = gw_chain_append(&s->chain, e)) != 0)
        gw_membership_free(m);
    if (rc == -EINVAL) {
        struct gw_error why = *err;
        gw_error_set(err, "", "store: shardgate_epochs row epoch_seq %s: %.600s",
                     PQgetvalue(res, row, 2), why.msg);
    }
    return rc;
}

int gw_pg_epochs_catch_up(struct gw_pg_store *s, struct gw_pg_conn *c, gw_epoch_fn apply, void *ctx,
                          struct gw_error *err)
{
    struct gw_epoch_entry latest = {.epoch_seq = 0};
    gw_chain_latest(&s->chain, &latest);
    char after[24];
    snprintf(after, sizeof(after), "%" PRIu64, latest.epoch_seq);
    const char *params[] = {after};
    PGresult *res = gw_pg_ensure(c, err) == 0
                        ? gw_pg_exec(c,
                                     "SELECT record, first_seq, epoch_seq FROM shardgate_epochs "
                                     "WHERE epoch_seq > $1 ORDER BY epoch_seq",
                                     1, params, err)
                        : NULL;
    if (!res)
        return -EIO;
    int rc = 0, rows = PQntuples(res);
    for (int row = 0; rc == 0 && row < rows; row++) {
        struct gw_contract contract;
        struct gw_membership members;
        struct gw_epoch_entry e;
        rc = replay_row(s, res, row, &contract, &members, &e, err);
        if (rc == 0 && row == rows - 1)
            rc = apply(ctx, &contract, &members, &e, err); /* takes members */
        else if (rc == 0)
            gw_membership_free(&members);
    }
    PQclear(res);
    return rc;
}

struct catch_up {
    struct gw_pg_store *s;
    gw_epoch_fn apply;
    void *ctx;
};

static int catch_up_on(struct gw_pg_conn *c, void *arg, struct gw_error *err)
{
    struct catch_up *u = arg;
    return gw_pg_epochs_catch_up(u->s, c, u->apply, u->ctx, err);
}

/* Before a membership change, on the readers' connection: one the database's restart left dead
 * is found by this read, which runs once more on a new one (gw_pg_once_more). */
int gw_pg_store_catch_up(struct gw_pg_store *s, gw_epoch_fn apply, void *ctx, struct gw_error *err)
{
    struct catch_up u = {s, apply, ctx};
    pthread_mutex_lock(&s->read_lock);
    int rc = gw_pg_once_more(&s->reader, catch_up_on, &u, err);
    pthread_mutex_unlock(&s->read_lock);
    return rc;
}

/* Under the locked sequencer row: the database's latest epoch must be `base` (NULL: none), and
 * so must the chain's. The receipts committed before now get their seqs first (a sequencer
 * round in this transaction), so the epoch's first_seq comes after every one of them. */
static int check_base(struct gw_pg_store *s, struct gw_pg_conn *c, const char *base,
                      uint64_t *last_seq, struct gw_error *err)
{
    PGresult *seq =
        gw_pg_exec(c, "SELECT last_seq FROM shardgate_sequencer FOR UPDATE", 0, NULL, err);
    PGresult *top = seq ? gw_pg_exec(c,
                                     "SELECT epoch FROM shardgate_epochs ORDER BY epoch_seq DESC "
                                     "LIMIT 1",
                                     0, NULL, err)
                        : NULL;
    int rc = top ? 0 : -EIO;
    if (rc == 0 && gw_pg_sequence_locked(c, last_seq, err) < 0)
        rc = -EIO;
    if (rc == 0) {
        const char *db = PQntuples(top) ? PQgetvalue(top, 0, 0) : NULL;
        struct gw_epoch_entry mine;
        int has = gw_chain_latest(&s->chain, &mine);
        if ((db == NULL) != (base == NULL) || (db && strcmp(db, base) != 0) ||
            has != (base != NULL) || (has && strcmp(mine.epoch, base) != 0)) {
            gw_error_set(err, "", "the latest epoch is %s, not %s: another replica changed it",
                         db ? db : "none", base ? base : "none");
            rc = -ESTALE;
        }
    }
    PQclear(seq);
    PQclear(top);
    return rc;
}

static int insert_epoch(struct gw_pg_conn *c, const struct gw_topology *t,
                        const struct gw_epoch_entry *e, struct gw_error *err)
{
    struct gw_buf line;
    gw_buf_init(&line);
    gw_records_epoch_line(&line, &t->contract, &t->members, e);
    gw_buf_append(&line, "", 1); /* a C string for libpq */
    char epoch_seq[24], first_seq[24];
    snprintf(epoch_seq, sizeof(epoch_seq), "%" PRIu64, e->epoch_seq);
    snprintf(first_seq, sizeof(first_seq), "%" PRIu64, e->first_seq);
    const char *params[] = {epoch_seq, e->epoch, first_seq, line.data};
    PGresult *res = line.failed ? NULL
                                : gw_pg_exec(c,
                                             "INSERT INTO shardgate_epochs (epoch_seq, epoch, "
                                             "first_seq, record) VALUES ($1, $2, $3, $4)",
                                             4, params, err);
    PGresult *note =
        res ? gw_pg_exec(c, "SELECT pg_notify('shardgate_epochs', $1)", 1, params, err) : NULL;
    int rc = line.failed ? -ENOMEM : note ? 0 : -EIO;
    PQclear(res);
    PQclear(note);
    gw_buf_free(&line);
    return rc;
}

static int record_on(struct gw_pg_store *s, struct gw_pg_conn *c, const struct gw_topology *t,
                     enum gw_epoch_source source, const char *base, struct gw_epoch_entry *out,
                     struct gw_error *err)
{
    uint64_t last_seq = 0;
    int rc = gw_pg_ensure(c, err);
    if (rc == 0)
        rc = gw_pg_run(c, "BEGIN", err);
    if (rc == 0)
        rc = check_base(s, c, base, &last_seq, err);
    if (rc == 0) {
        gw_chain_next(&s->chain, t->epoch, ring_id(t->ring), out);
        out->source = source;
        gw_chain_now(out->time);
        out->first_seq = last_seq + 1;
        rc = insert_epoch(c, t, out, err);
    }
    if (rc == 0)
        rc = gw_pg_run(c, "COMMIT", err);
    if (rc != 0 && c->conn) {
        struct gw_error ignored;
        gw_pg_run(c, "ROLLBACK", &ignored);
    }
    if (rc == 0 && gw_chain_append(&s->chain, out) != 0) {
        gw_error_set(err, "", "store: out of memory");
        rc = -ENOMEM;
    }
    return rc;
}

int gw_pg_epoch_record(struct gw_pg_store *s, const struct gw_topology *t,
                       enum gw_epoch_source source, const char *base, struct gw_epoch_entry *out,
                       struct gw_error *err)
{
    pthread_mutex_lock(&s->read_lock);
    int rc = record_on(s, &s->reader, t, source, base, out, err);
    pthread_mutex_unlock(&s->read_lock);
    return rc;
}

int gw_pg_epochs_open(struct gw_pg_store *s, const struct gw_topology *topo, gw_epoch_fn adopt,
                      void *ctx, struct gw_error *err)
{
    struct gw_epoch_entry e;
    for (int attempt = 0; attempt < 2; attempt++) {
        int rc = gw_pg_epochs_catch_up(s, &s->writer, adopt, ctx, err);
        if (rc != 0 || gw_chain_latest(&s->chain, &e))
            return rc;
        /* An empty chain: the files' epoch is the first, unless another replica's won. */
        rc = record_on(s, &s->writer, topo, GW_SOURCE_START, NULL, &e, err);
        if (rc != -ESTALE)
            return rc;
    }
    return -ESTALE;
}

struct record_read {
    const struct gw_epoch_entry *e;
    struct gw_buf *out;
    int found;
};

static int read_record_on(struct gw_pg_conn *c, void *arg, struct gw_error *err)
{
    struct record_read *q = arg;
    char seq[24];
    snprintf(seq, sizeof(seq), "%" PRIu64, q->e->epoch_seq);
    const char *params[] = {seq, q->e->epoch};
    PGresult *res = gw_pg_ensure(c, err) == 0 ? gw_pg_exec(c,
                                                           "SELECT record FROM shardgate_epochs "
                                                           "WHERE epoch_seq = $1 AND epoch = $2",
                                                           2, params, err)
                                              : NULL;
    if (!res)
        return -EIO;
    q->found = PQntuples(res) == 1;
    if (q->found)
        gw_buf_append(q->out, PQgetvalue(res, 0, 0), (size_t)PQgetlength(res, 0, 0));
    PQclear(res);
    return 0;
}

int gw_pg_epoch_record_read(struct gw_pg_store *s, const struct gw_epoch_entry *e,
                            struct gw_buf *out, struct gw_error *err)
{
    struct record_read q = {e, out, 0};
    pthread_mutex_lock(&s->read_lock);
    int rc = gw_pg_once_more(&s->reader, read_record_on, &q, err);
    pthread_mutex_unlock(&s->read_lock);
    if (rc == 0 && out->failed)
        return -ENOMEM;
    return rc != 0 ? rc : q.found ? 0 : -ENOENT;
}
