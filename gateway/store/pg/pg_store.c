/* The PostgreSQL store at start and for readers: schema check, the epoch chain, stored
 * receipts and totals (docs/journal.md §10). The writer is pg_commit.c. */
#include "pg_store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_migrate.h"

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

static int read_start_seq(struct gw_pg_store *s, struct gw_error *err)
{
    PGresult *res =
        gw_pg_exec(&s->writer, "SELECT last_seq FROM shardgate_sequencer", 0, NULL, err);
    if (!res)
        return -EIO;
    s->start_seq = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return 0;
}

int gw_pg_store_open(struct gw_pg_store *s, const struct gw_pg_open *o, struct gw_error *err)
{
    memset(s, 0, sizeof(*s));
    s->writer.url = s->reader.url = s->listener.url = o->url;
    s->query.url = o->read_url ? o->read_url : o->url;
    s->metrics = o->metrics;
    s->delay_ms = o->delay_ms;
    s->hook = o->hook;
    gw_chain_init(&s->chain);
    pthread_mutex_init(&s->read_lock, NULL);
    int rc = gw_pg_ensure(&s->writer, err);
    if (rc == 0)
        rc = schema_current(&s->writer, err);
    if (rc == 0)
        rc = gw_pg_epochs_open(s, o->topo, o->adopt, o->adopt_ctx, err);
    if (rc == 0)
        rc = read_start_seq(s, err);
    if (rc == 0) /* before the writer, which pokes it */
        rc = gw_pg_sequencer_start(s, err);
    if (rc == 0)
        rc = gw_pg_store_start_writer(s, err);
    if (rc == 0)
        atomic_store(&s->available, 1);
    else
        gw_pg_store_close(s);
    return rc;
}

struct read {
    const char *sql;
    int n;
    const char *const *params;
    PGresult *res;
};

static int exec_read(struct gw_pg_conn *c, void *ctx, struct gw_error *err)
{
    struct read *q = ctx;
    q->res = gw_pg_exec(c, q->sql, q->n, q->params, err);
    return q->res ? 0 : -EIO;
}

/* A reader's statement on the reader connection, run once more on a new connection when it
 * finds the old one dead (gw_pg_once_more): the first read after the database is back is
 * answered (docs/journal.md §10, Availability). */
static PGresult *read_query(struct gw_pg_store *s, const char *sql, int n,
                            const char *const *params, struct gw_error *err)
{
    struct read q = {sql, n, params, NULL};
    pthread_mutex_lock(&s->read_lock);
    gw_pg_once_more(&s->query, exec_read, &q, err);
    pthread_mutex_unlock(&s->read_lock);
    return q.res;
}

int gw_pg_store_find(struct gw_pg_store *s, const char *batch_id, struct gw_buf *out,
                     struct gw_error *err)
{
    const char *params[] = {batch_id};
    PGresult *res = read_query(s,
                               "SELECT receipt, encode(receipt_sha256, 'hex') FROM "
                               "shardgate_receipts WHERE batch_id = $1",
                               1, params, err);
    if (!res)
        return -EIO;
    int rc = PQntuples(res) == 0 ? -ENOENT : 0;
    const char *damage =
        rc ? NULL
           : gw_pg_receipt_damage(batch_id, PQgetvalue(res, 0, 0), (size_t)PQgetlength(res, 0, 0),
                                  PQgetvalue(res, 0, 1));
    if (damage)
        rc = gw_pg_receipt_refused(batch_id, damage, err);
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

/* A sum the database printed: plain decimal digits (numeric, never negative). */
static gw_u128 decimal(const char *digits)
{
    gw_u128 v = 0;
    for (; *digits >= '0' && *digits <= '9'; digits++)
        v = v * 10 + (gw_u128)(*digits - '0');
    return v;
}

/* Every acknowledged receipt counts: the totals the sequencer added, and the tallies of the
 * receipts still waiting for it, read in one snapshot (a round moves a receipt from one to the
 * other in one transaction). */
int gw_pg_store_totals(struct gw_pg_store *s, struct gw_ledger_entry **out, size_t *count,
                       struct gw_error *err)
{
    PGresult *res = read_query(
        s,
        "WITH a AS (SELECT epoch, shard, weight, capacity, received, load FROM shardgate_totals "
        "UNION ALL SELECT r.epoch, x.shard, x.weight, x.capacity, x.received, x.load FROM "
        "shardgate_receipts r, unnest(r.tally_shard, r.tally_weight, r.tally_capacity, "
        "r.tally_received, r.tally_load) AS x(shard, weight, capacity, received, load) WHERE "
        "r.seq IS NULL) "
        "SELECT t.shard, t.received, t.load, l.weight, l.capacity FROM "
        "(SELECT shard, sum(received) AS received, sum(load) AS load FROM a "
        "GROUP BY shard) t JOIN (SELECT DISTINCT ON (shard) shard, weight, capacity FROM "
        "a JOIN shardgate_epochs USING (epoch) ORDER BY shard, epoch_seq DESC) l "
        "USING (shard) ORDER BY t.shard COLLATE \"C\"",
        0, NULL, err);
    if (!res)
        return -EIO;
    size_t n = (size_t)PQntuples(res);
    *out = calloc(n ? n : 1, sizeof(**out));
    *count = n;
    for (size_t i = 0; *out && i < n; i++) {
        struct gw_ledger_entry *t = &(*out)[i];
        copy_field(t->id, sizeof(t->id), PQgetvalue(res, (int)i, 0));
        t->id_len = strlen(t->id);
        t->total.received = decimal(PQgetvalue(res, (int)i, 1));
        t->total.load = decimal(PQgetvalue(res, (int)i, 2));
        t->weight = (uint32_t)strtoul(PQgetvalue(res, (int)i, 3), NULL, 10);
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
    gw_pg_sequencer_stop(s);
    gw_pg_listener_stop(s);
    gw_worker_destroy(&s->worker);
    gw_pg_close(&s->writer);
    gw_pg_close(&s->reader);
    gw_pg_close(&s->query);
    gw_pg_close(&s->listener);
    gw_chain_free(&s->chain);
    pthread_mutex_destroy(&s->read_lock);
}
