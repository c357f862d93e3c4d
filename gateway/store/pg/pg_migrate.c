/* Versioned migrations: shardgate_schema lists the versions applied. */
#include "pg_migrate.h"

#include <errno.h>
#include <stdio.h>

#include "pg_migrations.h"

/* Held by every migrator for its transaction: one applies a version, the others then see it. */
#define MIGRATE_LOCK "SELECT pg_advisory_xact_lock(7316420117)"

unsigned gw_pg_schema_latest(void)
{
    return gw_pg_migration_count ? gw_pg_migrations[gw_pg_migration_count - 1].version : 0;
}

static int create_schema_table(struct gw_pg_conn *c, struct gw_error *err)
{
    int rc = gw_pg_run(c, "BEGIN", err);
    if (rc == 0)
        rc = gw_pg_run(c, MIGRATE_LOCK, err);
    if (rc == 0)
        rc = gw_pg_run(c,
                       "CREATE TABLE IF NOT EXISTS shardgate_schema (version integer PRIMARY KEY, "
                       "name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
                       err);
    return rc == 0 ? gw_pg_run(c, "COMMIT", err) : rc;
}

/* One migration in its own transaction, unless another migrator applied it meanwhile. */
static int apply(struct gw_pg_conn *c, const struct gw_pg_migration *m, struct gw_error *err)
{
    unsigned now = 0;
    char version[16];
    snprintf(version, sizeof(version), "%u", m->version);
    const char *params[] = {version, m->name};
    int rc = gw_pg_run(c, "BEGIN", err);
    if (rc == 0)
        rc = gw_pg_run(c, MIGRATE_LOCK, err);
    if (rc == 0)
        rc = gw_pg_schema_version(c, &now, err);
    if (rc == 0 && now < m->version) {
        rc = gw_pg_run(c, m->sql, err); /* several statements: the simple protocol */
        PGresult *res =
            rc == 0 ? gw_pg_exec(c, "INSERT INTO shardgate_schema (version, name) VALUES ($1, $2)",
                                 2, params, err)
                    : NULL;
        rc = rc == 0 && !res ? -EIO : rc;
        PQclear(res);
    }
    if (rc == 0)
        return gw_pg_run(c, "COMMIT", err);
    struct gw_error ignored;
    gw_pg_run(c, "ROLLBACK", &ignored);
    struct gw_error why = *err;
    gw_error_set(err, "", "store: migration %s: %.600s", m->name, why.msg);
    return rc;
}

int gw_pg_migrate(struct gw_pg_conn *c, unsigned *from, unsigned *to, struct gw_error *err)
{
    int rc = gw_pg_ensure(c, err);
    if (rc == 0)
        rc = create_schema_table(c, err);
    if (rc == 0)
        rc = gw_pg_schema_version(c, from, err);
    if (rc != 0)
        return rc;
    *to = *from;
    if (*from > gw_pg_schema_latest()) {
        gw_error_set(err, "",
                     "store: the database schema is version %u, newer than this shardgate's %u",
                     *from, gw_pg_schema_latest());
        return -EPROTO;
    }
    for (unsigned i = 0; i < gw_pg_migration_count; i++) {
        if (gw_pg_migrations[i].version <= *from)
            continue;
        if ((rc = apply(c, &gw_pg_migrations[i], err)) != 0)
            return rc;
        *to = gw_pg_migrations[i].version;
    }
    return 0;
}
