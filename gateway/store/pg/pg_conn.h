/* One libpq connection of --store postgres (docs/journal.md §10), reconnected on demand, and the
 * statements every user of it needs. Not thread-safe: one thread per connection. */
#ifndef SHARDGATE_GW_PG_CONN_H
#define SHARDGATE_GW_PG_CONN_H

#include <libpq-fe.h>

#include "error.h"

struct gw_pg_conn {
    const char *url; /* the postgres:// URL (kept by the caller) */
    PGconn *conn;    /* NULL until connected */
};

/* 1 when `url` names a PostgreSQL store (postgres:// or postgresql://). */
int gw_pg_is_url(const char *url);

/* Connects unless connected and healthy. Returns 0, or -ENOTCONN with err->msg
 * "store: <libpq's reason>" (the connection is closed). */
int gw_pg_ensure(struct gw_pg_conn *c, struct gw_error *err);

/* Runs fn(c, ctx, err) on the connection, connected first when needed. libpq learns that a
 * connection died (the database restarted since its last statement) only when a statement fails
 * on it, which closes it; fn then runs once more on a new connection (docs/journal.md §10,
 * Availability). Only for work that changes nothing before it fails. Returns fn's code, or
 * gw_pg_ensure's. */
int gw_pg_once_more(struct gw_pg_conn *c,
                    int (*fn)(struct gw_pg_conn *c, void *ctx, struct gw_error *err), void *ctx,
                    struct gw_error *err);

/* Runs one statement with text parameters. Returns the result when its status is
 * PGRES_COMMAND_OK or PGRES_TUPLES_OK (the caller PQclears it), else NULL with err->msg
 * "store: <what>"; a broken connection is closed (the next gw_pg_ensure reconnects). */
PGresult *gw_pg_exec(struct gw_pg_conn *c, const char *sql, int nparams, const char *const *params,
                     struct gw_error *err);

/* Runs statements without parameters (several, separated by `;`, in the simple protocol).
 * Returns 0 or -EIO (err set). */
int gw_pg_run(struct gw_pg_conn *c, const char *sql, struct gw_error *err);

/* One statement of a pipeline: text parameters, and where its result goes (NULL: dropped). */
struct gw_pg_stmt {
    const char *sql;
    int nparams;
    const char *const *params;
    PGresult **result;
};

/* Sends the statements in one pipeline (one round trip to the server, docs/journal.md §10) and
 * collects their results; a statement after a failed one is not run (the server aborts the
 * rest of the pipeline). Returns 0 when all succeeded, else -EIO with err->msg naming the first
 * failure (the results already collected stay for the caller to PQclear). A broken connection
 * is closed. For a few statements with small answers: the results are read after all are
 * sent. */
int gw_pg_pipeline(struct gw_pg_conn *c, const struct gw_pg_stmt *stmts, size_t n,
                   struct gw_error *err);

/* The schema version the database holds (0: none yet). Returns 0 or -EIO (err set). */
int gw_pg_schema_version(struct gw_pg_conn *c, unsigned *version, struct gw_error *err);

void gw_pg_close(struct gw_pg_conn *c);

#endif
