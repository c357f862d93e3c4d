/* The PostgreSQL store at start and for readers: schema check, the epoch chain, stored
 * receipts and totals (docs/journal.md §10). The writer is pg_commit.c. */
#include "pg_store.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "journal_epoch.h"
#include "pg_migrate.h"
#include "ring.h"

static int schema_current(struct gw_pg_conn *c, struct gw_error *err)
{
    unsigned version = 0;
    int rc = gw_pg_schema_version(c, &version, err);
    if (rc != 0 || version == gw_pg_schema_latest())
        return rc;
    gw_error_set(err, "",
                 "store: the database schema is version %u, this shardgate needs %u: run "
                 "`shardgate db %s --store URL`",
                 version, gw_pg_schema_latest(), version == 0 ? "init" : "migrate");
    return -EPROTO;
}

/* One epoch row through the journal's own chain rules (docs/journal.md §5). */
static int replay_epoch_row(struct gw_pg_store *s, PGresult *res, int row, struct gw_error *err)
{
    const char *line = PQgetvalue(res, row, 0);
    size_t len = (size_t)PQgetlength(res, row, 0);
    uint64_t first_seq = strtoull(PQgetvalue(res, row, 1), NULL, 10);
    json_error_t jerr;
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    struct gw_epoch_entry e;
    struct gw_membership m;
    int rc = root ? gw_epoch_record_replay(root, line, len, &s->chain, first_seq - 1, &e, &m, err)
                  : -EINVAL;
    if (!root)
        gw_error_set(err, "", "%s", jerr.text);
    json_decref(root);
    if (rc == 0) {
        gw_membership_free(&m);
        rc = gw_chain_append(&s->chain, &e);
    }
    if (rc == -EINVAL) {
        struct gw_error why = *err;
        gw_error_set(err, "", "store: shardgate_epochs row %d: %.600s", row + 1, why.msg);
    }
    return rc;
}

static int load_chain(struct gw_pg_store *s, uint64_t *last_seq, struct gw_error *err)
{
    PGresult *seq =
        gw_pg_exec(&s->writer, "SELECT last_seq FROM shardgate_sequencer FOR UPDATE", 0, NULL, err);
    if (!seq)
        return -EIO;
    *last_seq = strtoull(PQgetvalue(seq, 0, 0), NULL, 10);
    PQclear(seq);
    PGresult *res =
        gw_pg_exec(&s->writer, "SELECT record, first_seq FROM shardgate_epochs ORDER BY epoch_seq",
                   0, NULL, err);
    if (!res)
        return -EIO;
    int rc = 0;
    for (int row = 0; rc == 0 && row < PQntuples(res); row++)
        rc = replay_epoch_row(s, res, row, err);
    PQclear(res);
    return rc;
}

/* The start epoch of `topo` when the database's latest differs (docs/journal.md §5's rule). */
static int record_epoch(struct gw_pg_store *s, const struct gw_topology *topo, uint64_t last_seq,
                        struct gw_error *err)
{
    struct gw_epoch_entry latest, e;
    if (gw_chain_latest(&s->chain, &latest) && strcmp(latest.epoch, topo->epoch) == 0)
        return 0;
    gw_chain_next(&s->chain, topo->epoch, ring_id(topo->ring), &e);
    e.source = GW_SOURCE_START;
    gw_chain_now(e.time);
    e.first_seq = last_seq + 1;
    struct gw_buf line;
    gw_buf_init(&line);
    gw_journal_epoch_line(&line, &topo->contract, &topo->members, &e);
    gw_buf_append(&line, "", 1); /* libpq reads a C string; a gw_buf has no NUL of its own */
    char epoch_seq[24], first_seq[24];
    snprintf(epoch_seq, sizeof(epoch_seq), "%" PRIu64, e.epoch_seq);
    snprintf(first_seq, sizeof(first_seq), "%" PRIu64, e.first_seq);
    const char *params[] = {epoch_seq, e.epoch, first_seq, line.data};
    PGresult *res = line.failed ? NULL
                                : gw_pg_exec(&s->writer,
                                             "INSERT INTO shardgate_epochs (epoch_seq, epoch, "
                                             "first_seq, record) VALUES ($1, $2, $3, $4)",
                                             4, params, err);
    int rc = line.failed ? -ENOMEM : res ? gw_chain_append(&s->chain, &e) : -EIO;
    PQclear(res);
    gw_buf_free(&line);
    return rc;
}

/* The chain read and extended in one transaction that holds the sequencer row, so first_seq
 * is exact even while other replicas commit. */
static int open_epochs(struct gw_pg_store *s, const struct gw_topology *topo, uint64_t *epoch_seq,
                       struct gw_error *err)
{
    uint64_t last_seq = 0;
    int rc = gw_pg_run(&s->writer, "BEGIN", err);
    if (rc == 0)
        rc = load_chain(s, &last_seq, err);
    if (rc == 0)
        rc = record_epoch(s, topo, last_seq, err);
    if (rc == 0)
        rc = gw_pg_run(&s->writer, "COMMIT", err);
    struct gw_epoch_entry latest;
    if (rc == 0 && gw_chain_latest(&s->chain, &latest))
        *epoch_seq = latest.epoch_seq;
    if (rc != 0) {
        struct gw_error ignored;
        gw_pg_run(&s->writer, "ROLLBACK", &ignored);
    }
    return rc == -ENOMEM ? (gw_error_set(err, "", "store: out of memory"), rc) : rc;
}

int gw_pg_store_open(struct gw_pg_store *s, const char *url, const struct gw_topology *topo,
                     struct gw_metrics *metrics, unsigned delay_ms, uint64_t *epoch_seq,
                     struct gw_error *err)
{
    memset(s, 0, sizeof(*s));
    s->writer.url = s->reader.url = url;
    s->metrics = metrics;
    s->delay_ms = delay_ms;
    gw_chain_init(&s->chain);
    pthread_mutex_init(&s->read_lock, NULL);
    int rc = gw_pg_ensure(&s->writer, err);
    if (rc == 0)
        rc = schema_current(&s->writer, err);
    if (rc == 0)
        rc = open_epochs(s, topo, epoch_seq, err);
    if (rc == 0)
        rc = gw_pg_store_start_writer(s, err);
    if (rc == 0)
        atomic_store(&s->available, 1);
    else
        gw_pg_store_close(s);
    return rc;
}

/* A reader's statement on the reader connection, reconnected when needed. */
static PGresult *read_query(struct gw_pg_store *s, const char *sql, int n,
                            const char *const *params, struct gw_error *err)
{
    pthread_mutex_lock(&s->read_lock);
    PGresult *res =
        gw_pg_ensure(&s->reader, err) == 0 ? gw_pg_exec(&s->reader, sql, n, params, err) : NULL;
    pthread_mutex_unlock(&s->read_lock);
    return res;
}

int gw_pg_store_find(struct gw_pg_store *s, const char *batch_id, struct gw_buf *out,
                     struct gw_error *err)
{
    const char *params[] = {batch_id};
    PGresult *res =
        read_query(s, "SELECT receipt FROM shardgate_receipts WHERE batch_id = $1", 1, params, err);
    if (!res)
        return -EIO;
    int rc = PQntuples(res) == 0 ? -ENOENT : 0;
    if (rc == 0) {
        gw_buf_append(out, PQgetvalue(res, 0, 0), (size_t)PQgetlength(res, 0, 0));
        rc = out->failed ? -ENOMEM : 0;
    }
    PQclear(res);
    return rc;
}

static void copy_field(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src);
}

int gw_pg_store_totals(struct gw_pg_store *s, struct gw_pg_total **out, size_t *count,
                       struct gw_error *err)
{
    PGresult *res = read_query(
        s,
        "SELECT t.shard, t.received, t.load, l.weight, l.capacity FROM "
        "(SELECT shard, sum(received) AS received, sum(load) AS load FROM shardgate_totals "
        "GROUP BY shard) t JOIN (SELECT DISTINCT ON (shard) shard, weight, capacity FROM "
        "shardgate_totals JOIN shardgate_epochs USING (epoch) ORDER BY shard, epoch_seq DESC) l "
        "USING (shard) ORDER BY t.shard COLLATE \"C\"",
        0, NULL, err);
    if (!res)
        return -EIO;
    size_t n = (size_t)PQntuples(res);
    *out = calloc(n ? n : 1, sizeof(**out));
    *count = n;
    for (size_t i = 0; *out && i < n; i++) {
        struct gw_pg_total *t = &(*out)[i];
        copy_field(t->id, sizeof(t->id), PQgetvalue(res, (int)i, 0));
        copy_field(t->received, sizeof(t->received), PQgetvalue(res, (int)i, 1));
        copy_field(t->load, sizeof(t->load), PQgetvalue(res, (int)i, 2));
        t->weight = strtoull(PQgetvalue(res, (int)i, 3), NULL, 10);
        t->capacity = strtoull(PQgetvalue(res, (int)i, 4), NULL, 10);
    }
    PQclear(res);
    return *out ? 0 : -ENOMEM;
}

int gw_pg_store_available(struct gw_pg_store *s)
{
    return atomic_load(&s->available);
}

void gw_pg_store_close(struct gw_pg_store *s)
{
    gw_pg_store_stop(s);
    gw_worker_destroy(&s->worker);
    gw_pg_close(&s->writer);
    gw_pg_close(&s->reader);
    gw_chain_free(&s->chain);
    pthread_mutex_destroy(&s->read_lock);
}
