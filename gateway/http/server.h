/* `shardgate serve` seen from the commands: its options and one call that runs it. */
#ifndef SHARDGATE_GW_SERVER_H
#define SHARDGATE_GW_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "serve_options.h"

/* Serves until SIGTERM/SIGINT (SIGHUP reloads, docs/api.md §15), then drains (docs/api.md §13).
 * Returns the exit code (enum gw_exit): 0 after a drain, else why it could not start. */
int gw_server_run(const struct gw_serve_options *opt);

#endif
