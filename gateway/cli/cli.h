/* The `shardgate` commands and their exit codes (docs/tools.md §1). */
#ifndef SHARDGATE_GW_CLI_H
#define SHARDGATE_GW_CLI_H

#include <stdio.h>

#include "exit.h"

struct gw_command {
    const char *name;
    const char *summary;
    const char *usage; /* full --help text */
    int (*run)(int argc, char **argv);
};

int gw_cmd_dispatch(int argc, char **argv);
int gw_cmd_ring(int argc, char **argv);
int gw_cmd_lookup(int argc, char **argv);
int gw_cmd_serve(int argc, char **argv);
int gw_cmd_plan(int argc, char **argv);
int gw_cmd_moves(int argc, char **argv);
int gw_cmd_journal(int argc, char **argv);
int gw_cmd_db(int argc, char **argv);
int gw_cmd_admin(int argc, char **argv);

extern const char gw_usage_dispatch[];
extern const char gw_usage_ring[];
extern const char gw_usage_lookup[];
extern const char gw_usage_serve[];
extern const char gw_usage_plan[];
extern const char gw_usage_moves[];
extern const char gw_usage_journal[];
extern const char gw_usage_db[];
extern const char gw_usage_admin[];

struct gw_buf;

/* Writes all of `b` to `path` (NULL or "-": stdout). Returns GW_EXIT_OK, or GW_EXIT_INTERNAL with a
 * message on stderr. */
int gw_cli_write(const char *path, const struct gw_buf *b);

/* 1 when `path` means standard output: NULL or "-". */
int gw_cli_is_stdout(const char *path);

/* The contract path: --conf if given, else $SHARDGATE_CONF, else NULL. */
const char *gw_conf_path(const char *from_option);

#endif
