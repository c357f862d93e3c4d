/* A libpq connection: connect, run, and read the schema version. */
#include "pg_conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int gw_pg_is_url(const char *url)
{
    return strncmp(url, "postgres://", 11) == 0 || strncmp(url, "postgresql://", 13) == 0;
}

/* libpq's messages end with a newline; the error names the store and keeps one line. */
static void set_pq_error(struct gw_error *err, const char *what, const char *pq)
{
    size_t n = strcspn(pq, "\n");
    gw_error_set(err, "", "store: %s: %.*s", what, (int)(n > 500 ? 500 : n), pq);
}

/* NOTICEs (such as "relation already exists, skipping") are not the operator's concern. */
static void ignore_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

int gw_pg_ensure(struct gw_pg_conn *c, struct gw_error *err)
{
    if (c->conn && PQstatus(c->conn) == CONNECTION_OK)
        return 0;
    gw_pg_close(c);
    /* connect_timeout bounds a start or a retry against an unreachable host (docs/api.md §10). */
    const char *keys[] = {"dbname", "connect_timeout", "application_name", NULL};
    const char *values[] = {c->url, "5", "shardgate", NULL};
    c->conn = PQconnectdbParams(keys, values, 1);
    if (c->conn && PQstatus(c->conn) == CONNECTION_OK) {
        PQsetNoticeProcessor(c->conn, ignore_notice, NULL);
        return 0;
    }
    set_pq_error(err, "cannot connect", c->conn ? PQerrorMessage(c->conn) : "out of memory");
    gw_pg_close(c);
    return -ENOTCONN;
}

/* A result that is not what a statement should give: the error, and a broken connection
 * closed. */
static PGresult *checked(struct gw_pg_conn *c, PGresult *res, struct gw_error *err)
{
    ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
        return res;
    set_pq_error(err, "statement failed",
                 res ? PQresultErrorMessage(res) : PQerrorMessage(c->conn));
    PQclear(res);
    if (PQstatus(c->conn) != CONNECTION_OK)
        gw_pg_close(c);
    return NULL;
}

int gw_pg_once_more(struct gw_pg_conn *c,
                    int (*fn)(struct gw_pg_conn *c, void *ctx, struct gw_error *err), void *ctx,
                    struct gw_error *err)
{
    int rc = -EIO;
    for (int attempt = 0; attempt < 2; attempt++) {
        int was_open = c->conn != NULL;
        rc = gw_pg_ensure(c, err);
        if (rc == 0)
            rc = fn(c, ctx, err);
        if (rc == 0 || !(was_open && c->conn == NULL))
            break; /* done, or not a connection found dead by this attempt */
    }
    return rc;
}

PGresult *gw_pg_exec(struct gw_pg_conn *c, const char *sql, int nparams, const char *const *params,
                     struct gw_error *err)
{
    if (!c->conn) {
        gw_error_set(err, "", "store: not connected");
        return NULL;
    }
    return checked(c, PQexecParams(c->conn, sql, nparams, NULL, params, NULL, NULL, 0), err);
}

/* The results of one statement of a pipeline, up to the NULL that ends them: the first good one
 * kept (or dropped), a failure into err (the first only). */
static int collect(PGconn *conn, PGresult **keep, int rc, struct gw_error *err)
{
    PGresult *res;
    while ((res = PQgetResult(conn)) != NULL) {
        ExecStatusType st = PQresultStatus(res);
        if ((st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) && keep && !*keep) {
            *keep = res;
            continue;
        }
        if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && rc == 0) {
            set_pq_error(err, "statement failed",
                         st == PGRES_PIPELINE_ABORTED ? "pipeline aborted"
                                                      : PQresultErrorMessage(res));
            rc = -EIO;
        }
        PQclear(res);
    }
    return rc;
}

int gw_pg_pipeline(struct gw_pg_conn *c, const struct gw_pg_stmt *stmts, size_t n,
                   struct gw_error *err)
{
    if (!c->conn || !PQenterPipelineMode(c->conn)) {
        gw_error_set(err, "", "store: not connected");
        return -EIO;
    }
    size_t sent = 0;
    while (sent < n && PQsendQueryParams(c->conn, stmts[sent].sql, stmts[sent].nparams, NULL,
                                         stmts[sent].params, NULL, NULL, 0))
        sent++;
    if (sent < n || !PQpipelineSync(c->conn)) {
        /* Nothing was flushed, or the connection broke: closing it rolls the transaction back
         * on the server. */
        set_pq_error(err, "cannot send", PQerrorMessage(c->conn));
        gw_pg_close(c);
        return -EIO;
    }
    int rc = 0;
    for (size_t i = 0; i < n; i++)
        rc = collect(c->conn, stmts[i].result, rc, err);
    PQclear(PQgetResult(c->conn)); /* PGRES_PIPELINE_SYNC */
    if (!PQexitPipelineMode(c->conn) || PQstatus(c->conn) != CONNECTION_OK) {
        if (rc == 0)
            set_pq_error(err, "pipeline", PQerrorMessage(c->conn));
        gw_pg_close(c);
        return -EIO;
    }
    return rc;
}

int gw_pg_run(struct gw_pg_conn *c, const char *sql, struct gw_error *err)
{
    if (!c->conn) {
        gw_error_set(err, "", "store: not connected");
        return -EIO;
    }
    PGresult *res = checked(c, PQexec(c->conn, sql), err);
    int rc = res ? 0 : -EIO;
    PQclear(res);
    return rc;
}

int gw_pg_schema_version(struct gw_pg_conn *c, unsigned *version, struct gw_error *err)
{
    PGresult *res =
        gw_pg_exec(c, "SELECT to_regclass('shardgate_schema') IS NOT NULL", 0, NULL, err);
    if (!res)
        return -EIO;
    int exists = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    PQclear(res);
    *version = 0;
    if (!exists)
        return 0;
    res = gw_pg_exec(c, "SELECT coalesce(max(version), 0) FROM shardgate_schema", 0, NULL, err);
    if (!res)
        return -EIO;
    *version = (unsigned)strtoul(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return 0;
}

void gw_pg_close(struct gw_pg_conn *c)
{
    if (c->conn)
        PQfinish(c->conn);
    c->conn = NULL;
}
