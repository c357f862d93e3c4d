/* libpq for the health service: connect read-only, run SELECTs in one snapshot. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pg.h"

int hc_pg_is_url(const char *url)
{
    return strncmp(url, "postgres://", 11) == 0 || strncmp(url, "postgresql://", 13) == 0;
}

/* libpq's messages end with a newline and may span lines: the first line, at most 400 bytes. */
static int hc_pg_error(struct hc_err *err, int code, const char *what, const char *pq)
{
    size_t n = strcspn(pq, "\n");
    return hc_err_set(err, code, "%s%.*s", what, (int)(n > 400 ? 400 : n), pq);
}

static void hc_pg_quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

int hc_pg_connect(struct hc_pg *c, const char *url, struct hc_err *err)
{
    if (c->conn != NULL && PQstatus(c->conn) == CONNECTION_OK)
        return 0;
    hc_pg_close(c);
    /* The URL may set the first two; nothing overrides the read-only default after it. */
    const char *keys[] = {"connect_timeout", "application_name", "dbname", "options", NULL};
    const char *values[] = {"5", "shardgate-health", url, "-c default_transaction_read_only=on",
                            NULL};
    c->conn = PQconnectdbParams(keys, values, 1);
    if (c->conn != NULL && PQstatus(c->conn) == CONNECTION_OK) {
        PQsetNoticeProcessor(c->conn, hc_pg_quiet, NULL);
        return 0;
    }
    int rc = hc_pg_error(err, -ENOTCONN,
                         "cannot connect: ", c->conn ? PQerrorMessage(c->conn) : "out of memory");
    hc_pg_close(c);
    return rc;
}

/* The code of a failed statement, from its SQLSTATE (42501 insufficient_privilege, 42P01
 * undefined_table) or the connection's state. */
static int hc_pg_code(const struct hc_pg *c, const PGresult *res)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (PQstatus(c->conn) != CONNECTION_OK)
        return -ENOTCONN;
    if (state != NULL && strcmp(state, "42501") == 0)
        return -EACCES;
    if (state != NULL && strcmp(state, "42P01") == 0)
        return -ENOENT;
    return -EPROTO;
}

/* Runs sql; NULL with *code and err set unless it gave want. */
static PGresult *hc_pg_run(struct hc_pg *c, const char *sql, ExecStatusType want, int *code,
                           struct hc_err *err)
{
    if (c->conn == NULL) {
        *code = hc_err_set(err, -ENOTCONN, "not connected");
        return NULL;
    }
    PGresult *res = PQexec(c->conn, sql);
    if (res != NULL && PQresultStatus(res) == want)
        return res;
    *code = hc_pg_code(c, res);
    const char *pq = res ? PQresultErrorMessage(res) : PQerrorMessage(c->conn);
    if (strncmp(pq, "ERROR:  ", 8) == 0)
        pq += 8; /* the severity says nothing here: every failure is one */
    hc_pg_error(err, *code, *code == -ENOTCONN ? "connection lost: " : "", pq);
    PQclear(res);
    if (*code == -ENOTCONN)
        hc_pg_close(c);
    return NULL;
}

int hc_pg_begin(struct hc_pg *c, struct hc_err *err)
{
    int code = 0;
    PGresult *res = hc_pg_run(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                              PGRES_COMMAND_OK, &code, err);
    PQclear(res);
    return res != NULL ? 0 : code;
}

void hc_pg_end(struct hc_pg *c)
{
    if (c->conn != NULL && PQtransactionStatus(c->conn) != PQTRANS_IDLE)
        PQclear(PQexec(c->conn, "ROLLBACK"));
}

PGresult *hc_pg_select(struct hc_pg *c, const char *sql, int *code, struct hc_err *err)
{
    if (strncmp(sql, "SELECT ", 7) != 0) {
        *code = hc_err_set(err, -EINVAL, "refused a statement that is not a SELECT");
        return NULL;
    }
    return hc_pg_run(c, sql, PGRES_TUPLES_OK, code, err);
}

void hc_pg_close(struct hc_pg *c)
{
    if (c->conn != NULL)
        PQfinish(c->conn);
    c->conn = NULL;
}
