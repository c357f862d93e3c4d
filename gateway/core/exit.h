/* The exit codes of every `shardgate` command (docs/tools.md §1) and the one rule that turns
 * a library error into one: out of memory is always GW_EXIT_INTERNAL. */
#ifndef SHARDGATE_GW_EXIT_H
#define SHARDGATE_GW_EXIT_H

enum gw_exit {
    GW_EXIT_OK = 0,
    GW_EXIT_INTERNAL = 1,
    GW_EXIT_NOT_OK = 2,   /* receipt not ok, or the batch invalid */
    GW_EXIT_UNUSABLE = 3, /* contract or membership unusable */
    GW_EXIT_USAGE = 64,
    GW_EXIT_IN_USE = 75, /* the state dir is another process's: try later (EX_TEMPFAIL) */
};

/* The exit code of a failed call that returned `rc` (< 0): GW_EXIT_INTERNAL for -ENOMEM,
 * else `otherwise`. */
int gw_exit_for(int rc, int otherwise);

/* The exit code of opening a state dir or a store that returned `rc`: OK, UNUSABLE for
 * -EINVAL (damaged or refused input), IN_USE for -EBUSY (locked by another process), else
 * INTERNAL. */
int gw_exit_of_open(int rc);

/* Loads the topology or prints why not on stderr; returns GW_EXIT_OK, GW_EXIT_UNUSABLE, or
 * GW_EXIT_INTERNAL when out of memory. */
struct gw_topology;
int gw_exit_load_topology(const char *conf, const char *shards, struct gw_topology *t);

#endif
