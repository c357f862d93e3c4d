/* `shardgate db init|migrate|status` (docs/operations.md, Scale-out): the schema of
 * --store postgres, from the migrations this binary carries (docs/journal.md §10). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "pg_migrate.h"

const char gw_usage_db[] =
    "usage: shardgate db init --store URL\n"
    "       shardgate db migrate --store URL\n"
    "       shardgate db status --store URL\n"
    "init creates the tables of --store postgres in an empty database; migrate applies the\n"
    "migrations the database lacks (each once, even with several migrators at a time); status\n"
    "prints `schema_version N` and `binary_version M`. URL: postgres://USER@HOST:PORT/DB (libpq).\n"
    "exit: 0 done (status: the schema is this binary's), 2 status: the schema is older,\n"
    "      3 the database cannot be reached, is already initialised (init) or is newer than\n"
    "      this binary, 64 usage, 1 internal error.\n";

static int usage(const char *what)
{
    fprintf(stderr, "shardgate: %s\n%s", what, gw_usage_db);
    return GW_EXIT_USAGE;
}

static int status(struct gw_pg_conn *c)
{
    struct gw_error err;
    unsigned version = 0;
    if (gw_pg_ensure(c, &err) != 0 || gw_pg_schema_version(c, &version, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return GW_EXIT_UNUSABLE;
    }
    printf("schema_version %u\nbinary_version %u\n", version, gw_pg_schema_latest());
    return version == gw_pg_schema_latest()  ? GW_EXIT_OK
           : version < gw_pg_schema_latest() ? GW_EXIT_NOT_OK
                                             : GW_EXIT_UNUSABLE;
}

/* init refuses a database that already has shardgate's schema: a second `init` is a mistake
 * (the wrong URL?) that `migrate` would hide. */
static int migrate(struct gw_pg_conn *c, int init)
{
    struct gw_error err;
    unsigned from = 0, to = 0;
    int rc = gw_pg_ensure(c, &err);
    if (rc == 0 && init)
        rc = gw_pg_schema_version(c, &from, &err);
    if (rc == 0 && init && from > 0) {
        fprintf(stderr,
                "store: the database already holds shardgate's schema (version %u): "
                "use `shardgate db migrate`\n",
                from);
        return GW_EXIT_UNUSABLE;
    }
    if (rc == 0)
        rc = gw_pg_migrate(c, &from, &to, &err);
    if (rc != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return GW_EXIT_UNUSABLE;
    }
    printf("schema_version %u -> %u\n", from, to);
    return GW_EXIT_OK;
}

static int is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

int gw_cmd_db(int argc, char **argv)
{
    /* `db --help`, and `db init --help` as every other command's `--help` */
    if ((argc == 2 && is_help(argv[1])) || (argc == 3 && is_help(argv[2]))) {
        fputs(gw_usage_db, stdout);
        return GW_EXIT_OK;
    }
    if (argc != 4 || strcmp(argv[2], "--store") != 0)
        return usage("db needs a subcommand and --store URL");
    if (!gw_pg_is_url(argv[3]))
        return usage("--store must be a postgres:// URL");
    struct gw_pg_conn c = {argv[3], NULL};
    int rc = strcmp(argv[1], "status") == 0    ? status(&c)
             : strcmp(argv[1], "init") == 0    ? migrate(&c, 1)
             : strcmp(argv[1], "migrate") == 0 ? migrate(&c, 0)
                                               : usage("db: unknown subcommand");
    gw_pg_close(&c);
    return rc;
}
