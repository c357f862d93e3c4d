/* Library errors to exit codes, in one place (docs/decisions.md §28). */
#include "exit.h"

#include <errno.h>
#include <stdio.h>

#include "topology.h"

int gw_exit_for(int rc, int otherwise)
{
    return rc == -ENOMEM ? GW_EXIT_INTERNAL : otherwise;
}

int gw_exit_of_open(int rc)
{
    return rc == 0         ? GW_EXIT_OK
           : rc == -EINVAL ? GW_EXIT_UNUSABLE
           : rc == -EBUSY  ? GW_EXIT_IN_USE
                           : GW_EXIT_INTERNAL;
}

int gw_exit_load_topology(const char *conf, const char *shards, struct gw_topology *t)
{
    struct gw_error err;
    if (!conf) {
        fprintf(stderr, "contract: no contract file: pass --conf FILE or set SHARDGATE_CONF\n");
        return GW_EXIT_UNUSABLE;
    }
    int rc = gw_topology_load(conf, shards, t, &err);
    if (rc != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return gw_exit_for(rc, GW_EXIT_UNUSABLE);
    }
    return GW_EXIT_OK;
}
