/* The `shardgate` commands and their exit codes (docs/tools.md §1). */
#ifndef SHARDGATE_GW_CLI_H
#define SHARDGATE_GW_CLI_H

#include <stdio.h>

enum gw_exit {
    GW_EXIT_OK = 0,
    GW_EXIT_INTERNAL = 1,
    GW_EXIT_NOT_OK = 2,   /* receipt not ok, or the batch invalid */
    GW_EXIT_UNUSABLE = 3, /* contract or membership unusable */
    GW_EXIT_USAGE = 64,
};

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

extern const char gw_usage_dispatch[];
extern const char gw_usage_ring[];
extern const char gw_usage_lookup[];
extern const char gw_usage_serve[];

/* The contract path: --conf if given, else $SHARDGATE_CONF, else NULL. */
const char *gw_conf_path(const char *from_option);

/* Loads the topology or prints why not; returns GW_EXIT_OK or GW_EXIT_UNUSABLE. */
struct gw_topology;
int gw_cli_load_topology(const char *conf, const char *shards, struct gw_topology *t);

#endif
