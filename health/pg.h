/* health's own libpq connection to a --store database: read-only, and nothing but SELECTs. */
#ifndef HC_PG_H
#define HC_PG_H

#include <libpq-fe.h>

#include "error.h"

struct hc_pg {
    PGconn *conn; /* NULL: not connected */
};

/* 1 when url is a postgres:// or postgresql:// URL. */
int hc_pg_is_url(const char *url);

/* Connects unless connected, every transaction read-only (docs/operations.md §1.7). Returns 0,
 * or -ENOTCONN with err = "cannot connect: <libpq's first line>". */
int hc_pg_connect(struct hc_pg *c, const char *url, struct hc_err *err);

/* Opens the one read-only snapshot of a read (BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY);
 * hc_pg_end ends it (ROLLBACK: nothing was written). Return as hc_pg_select's code. */
int hc_pg_begin(struct hc_pg *c, struct hc_err *err);
void hc_pg_end(struct hc_pg *c);

/* Runs one SELECT (anything else is refused, -EINVAL) and returns its rows, or NULL with *code
 * and err set: -EACCES permission denied, -ENOENT an undefined table, -ENOTCONN the
 * connection was lost (then closed), -EPROTO any other failure. */
PGresult *hc_pg_select(struct hc_pg *c, const char *sql, int *code, struct hc_err *err);

void hc_pg_close(struct hc_pg *c);

#endif
