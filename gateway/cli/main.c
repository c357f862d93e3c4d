/* `shardgate`: the command table, --help and --version. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#ifndef SHARDGATE_VERSION
#define SHARDGATE_VERSION "0.0.0"
#endif

static const struct gw_command commands[] = {
    {"dispatch", "place one batch and print its receipt", gw_usage_dispatch, gw_cmd_dispatch},
    {"ring", "show the ring built from the contract and membership", gw_usage_ring, gw_cmd_ring},
    {"lookup", "show where keys are placed", gw_usage_lookup, gw_cmd_lookup},
    {"serve", "serve the HTTP API with a durable journal", gw_usage_serve, gw_cmd_serve},
    {"plan", "show what a membership change would move", gw_usage_plan, gw_cmd_plan},
    {"moves", "show the ranges that moved between two epochs of a journal", gw_usage_moves,
     gw_cmd_moves},
    {"journal", "verify a state dir's journal and checkpoints", gw_usage_journal, gw_cmd_journal},
    {"db", "create or migrate the schema of --store postgres", gw_usage_db, gw_cmd_db},
    {"admin", "status, epochs and membership changes of a running server", gw_usage_admin,
     gw_cmd_admin},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: shardgate COMMAND [OPTIONS]   (shardgate COMMAND --help)\n"
                 "       shardgate --version\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return GW_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return GW_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("shardgate %s\n", SHARDGATE_VERSION);
        return GW_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "shardgate: unknown command \"%s\"\n", argv[1]);
    usage(stderr);
    return GW_EXIT_USAGE;
}
