/* The sequencer of --store postgres (docs/journal.md §10): committed receipts wait with no seq
 * (pg_commit.c) until one replica, the one holding the session advisory lock, gives them the
 * next seqs in one short transaction of its own that also adds their tallies to the totals and
 * NOTIFYs every replica's feed watchers. Seqs stay gap-free and never go back: only the holder
 * gives them, under the sequencer row's lock, which an epoch change takes too (its first_seq is
 * last_seq + 1), and a reader sees all of one round or none of it. The lock goes with the
 * holder's session: when that replica dies, another takes the role within a tick. */
#include "pg_store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timing.h"

#define SEQUENCER_LOCK "7239861041" /* pg_try_advisory_lock key: the sequencer's role */
#define ROUND_MAX 10000             /* receipts per round */
#define TICK_MS 1000                /* a follower asks for the role, a lost connection retries */
#define ROUND_GAP_MS 2              /* between rounds that found receipts: one WAL flush a round */
#define POLL_MAX_MS 50              /* idle: other replicas' commits are found within this */

/* One round: the waiting receipts in the order they committed, their seqs, their tallies added
 * to the totals, the new last_seq and the NOTIFY "<last_seq> <shard_bits>" (pg_listen.c). The
 * sequencer row is locked by the statement before it in the same transaction. */
static const char round_sql[] =
    "WITH p AS (SELECT batch_id, committed_at FROM shardgate_receipts WHERE seq IS NULL "
    "ORDER BY committed_at, batch_id LIMIT $1 FOR UPDATE), "
    "n AS (SELECT batch_id, row_number() OVER (ORDER BY committed_at, batch_id) AS k FROM p), "
    "b AS (SELECT last_seq FROM shardgate_sequencer), "
    "u AS (UPDATE shardgate_receipts r SET seq = b.last_seq + n.k FROM n, b "
    "WHERE r.batch_id = n.batch_id RETURNING r.epoch, r.shard_bits, r.tally_shard, "
    "r.tally_weight, r.tally_capacity, r.tally_received, r.tally_load), "
    "t AS (INSERT INTO shardgate_totals (epoch, shard, weight, capacity, received, load) "
    "SELECT u.epoch, x.shard, max(x.weight), max(x.capacity), sum(x.received), sum(x.load) "
    "FROM u, unnest(u.tally_shard, u.tally_weight, u.tally_capacity, u.tally_received, "
    "u.tally_load) AS x(shard, weight, capacity, received, load) GROUP BY u.epoch, x.shard "
    "ON CONFLICT (epoch, shard) DO UPDATE SET received = shardgate_totals.received + "
    "EXCLUDED.received, load = shardgate_totals.load + EXCLUDED.load), "
    "c AS (SELECT count(*) AS n, coalesce(bit_or(shard_bits), 0) AS bits FROM u), "
    "s AS (UPDATE shardgate_sequencer SET last_seq = last_seq + c.n FROM c WHERE c.n > 0 "
    "RETURNING last_seq) "
    "SELECT c.n, coalesce((SELECT last_seq FROM s), (SELECT last_seq FROM b)), "
    "(SELECT pg_notify('shardgate_receipts', s.last_seq || ' ' || c.bits) FROM s) FROM c";

/* round_sql's $1. */
struct round_limit {
    char text[24];
    const char *params[1];
};

static void round_limit_init(struct round_limit *l)
{
    snprintf(l->text, sizeof(l->text), "%d", ROUND_MAX);
    l->params[0] = l->text;
}

long gw_pg_sequence_locked(struct gw_pg_conn *c, uint64_t *last_seq, struct gw_error *err)
{
    struct round_limit limit;
    round_limit_init(&limit);
    long total = 0, n;
    do {
        PGresult *res = gw_pg_exec(c, round_sql, 1, limit.params, err);
        if (!res)
            return -EIO;
        n = strtol(PQgetvalue(res, 0, 0), NULL, 10);
        *last_seq = strtoull(PQgetvalue(res, 0, 1), NULL, 10);
        PQclear(res);
        total += n;
    } while (n == ROUND_MAX);
    return total;
}

/* 1 once this replica holds the role, 0 when another does, negative on error. */
static int try_lead(struct gw_pg_store *s, struct gw_error *err)
{
    if (gw_pg_ensure(&s->sequencer, err) != 0)
        return -ENOTCONN;
    PGresult *res =
        gw_pg_exec(&s->sequencer, "SELECT pg_try_advisory_lock(" SEQUENCER_LOCK ")", 0, NULL, err);
    if (!res)
        return -EIO;
    int lead = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    PQclear(res);
    return lead;
}

/* 1 when receipts wait for their seqs: asked before a polled round, so that an idle poll
 * neither locks the sequencer row nor writes. */
static int any_waiting(struct gw_pg_store *s, struct gw_error *err)
{
    PGresult *res = gw_pg_exec(&s->sequencer,
                               "SELECT EXISTS (SELECT 1 FROM shardgate_receipts WHERE seq IS NULL)",
                               0, NULL, err);
    if (!res)
        return -EIO;
    int any = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    PQclear(res);
    return any;
}

/* Gives seqs to up to ROUND_MAX receipts waiting; returns how many, or a negative code. */
static long sequence_round(struct gw_pg_store *s, struct gw_error *err)
{
    struct round_limit limit;
    round_limit_init(&limit);
    PGresult *done = NULL;
    const struct gw_pg_stmt stmts[] = {
        {"BEGIN", 0, NULL, NULL},
        {"SELECT last_seq FROM shardgate_sequencer FOR UPDATE", 0, NULL, NULL},
        {round_sql, 1, limit.params, &done},
        {"COMMIT", 0, NULL, NULL}};
    int rc = gw_pg_pipeline(&s->sequencer, stmts, 4, err);
    long n =
        rc == 0 && done && PQntuples(done) == 1 ? strtol(PQgetvalue(done, 0, 0), NULL, 10) : -EIO;
    PQclear(done);
    if (rc != 0 && s->sequencer.conn) {
        struct gw_error ignored;
        gw_pg_run(&s->sequencer, "ROLLBACK", &ignored);
    }
    return rc == 0 ? n : rc;
}

/* Waits up to ms or until stopped; a poke (this replica committed) ends it only when
 * `poke_ends`, as a follower has nothing to do with its commits. Returns 1 when poked. */
static int wait_ms(struct gw_pg_store *s, unsigned ms, int poke_ends)
{
    uint64_t until = gw_now_ns() + (uint64_t)ms * 1000000u;
    pthread_mutex_lock(&s->seq_worker.lock);
    while (!(poke_ends && s->seq_poked) && !s->seq_worker.stopping &&
           !gw_worker_wait_until(&s->seq_worker, until))
        ;
    int poked = s->seq_poked;
    s->seq_poked = 0;
    pthread_mutex_unlock(&s->seq_worker.lock);
    return poked;
}

static int stopping(struct gw_pg_store *s)
{
    pthread_mutex_lock(&s->seq_worker.lock);
    int stop = s->seq_worker.stopping;
    pthread_mutex_unlock(&s->seq_worker.lock);
    return stop;
}

/* Leads when it can; a lost connection loses the role (the lock was the session's). A round
 * runs at once after a poke (this replica's commit) or a round that found receipts; a poll asks
 * first whether any wait. */
static void *sequencer_main(void *arg)
{
    struct gw_pg_store *s = arg;
    struct gw_error err;
    unsigned poll = ROUND_GAP_MS;
    int lead = 0, ask = 1;
    while (!stopping(s)) {
        if (!lead && (lead = try_lead(s, &err)) != 1) {
            lead = 0;
            wait_ms(s, TICK_MS, 0);
            continue;
        }
        long n = ask ? any_waiting(s, &err) : 1;
        if (n > 0)
            n = sequence_round(s, &err);
        if (n < 0) {
            gw_pg_close(&s->sequencer);
            lead = 0;
            ask = 1;
            wait_ms(s, TICK_MS, 0);
            continue;
        }
        ask = n == 0;
        if (n == ROUND_MAX)
            continue;
        if (n > 0) { /* the commits of the next ROUND_GAP_MS share one round (and its flush) */
            gw_sleep_ms(ROUND_GAP_MS);
            poll = ROUND_GAP_MS;
            continue;
        }
        /* nothing waited: a poke, or the next poll, whichever is first */
        ask = !wait_ms(s, poll, 1);
        poll = poll * 2 > POLL_MAX_MS ? POLL_MAX_MS : poll * 2;
    }
    /* Stopping: what this replica committed gets its seqs now when it leads (else the leader's
     * next round gives them). */
    while (lead && sequence_round(s, &err) > 0)
        ;
    gw_pg_close(&s->sequencer);
    return NULL;
}

int gw_pg_sequencer_start(struct gw_pg_store *s, struct gw_error *err)
{
    s->sequencer.url = s->writer.url;
    s->seq_poked = 0;
    return gw_worker_start(&s->seq_worker, sequencer_main, s, "store sequencer", err);
}

void gw_pg_sequencer_poke(struct gw_pg_store *s)
{
    if (!s->seq_worker.started)
        return;
    pthread_mutex_lock(&s->seq_worker.lock);
    s->seq_poked = 1;
    pthread_cond_signal(&s->seq_worker.wake);
    pthread_mutex_unlock(&s->seq_worker.lock);
}

void gw_pg_sequencer_stop(struct gw_pg_store *s)
{
    gw_worker_destroy(&s->seq_worker);
}
