/* `shardgate db init|migrate`: the schema of --store postgres brought to this binary's version
 * (docs/journal.md §10, docs/operations.md, Scale-out). */
#ifndef SHARDGATE_GW_PG_MIGRATE_H
#define SHARDGATE_GW_PG_MIGRATE_H

#include "error.h"
#include "pg_conn.h"

/* The newest schema version this binary knows. */
unsigned gw_pg_schema_latest(void);

/* Applies every migration newer than the database's, each in its own transaction under an
 * advisory lock, so concurrent migrators apply each once. *from and *to: the versions before
 * and after. Returns 0, -ENOTCONN/-EIO (err set), or -EPROTO when the database is newer than
 * this binary (err says so; nothing changed). */
int gw_pg_migrate(struct gw_pg_conn *c, unsigned *from, unsigned *to, struct gw_error *err);

#endif
