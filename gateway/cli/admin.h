/* The subcommands of `shardgate admin` (docs/tools.md §1.2) and what they share. */
#ifndef SHARDGATE_GW_ADMIN_H
#define SHARDGATE_GW_ADMIN_H

#include <jansson.h>
#include <stdint.h>

#include "admin_http.h"

struct gw_admin_args {
    const char *url, *token_file, *admin_file, *to, *max_movement, *shard;
    int json, force;
    uint64_t after;
};

int gw_admin_status(struct gw_admin_client *c, const struct gw_admin_args *a);
int gw_admin_epochs(struct gw_admin_client *c, const struct gw_admin_args *a);
int gw_admin_plan(struct gw_admin_client *c, const struct gw_admin_args *a);
int gw_admin_apply(struct gw_admin_client *c, const struct gw_admin_args *a);
int gw_admin_tail(struct gw_admin_client *c, const struct gw_admin_args *a);

/* A request of subcommand `cmd` whose answer must be 2xx: GW_EXIT_OK; else what went wrong on
 * stderr and GW_EXIT_UNUSABLE (no answer) or GW_EXIT_NOT_OK (the server refused: its status,
 * error code and message). The answer is the caller's to free either way. */
int gw_admin_call(struct gw_admin_client *c, const char *cmd, const char *method, const char *path,
                  const char *token, const char *if_match, const struct gw_buf *body,
                  struct gw_admin_answer *a);

/* The answer's JSON, its big totals (load_total, received_total) read as strings so no digit is
 * lost; NULL (said on stderr) when it is not JSON. */
json_t *gw_admin_json(const struct gw_admin_answer *a, const char *cmd);

/* A string member of obj, or `dflt`. */
const char *gw_admin_str(json_t *obj, const char *key, const char *dflt);

/* Writes `len` bytes and a newline if they lack one to stdout; GW_EXIT_INTERNAL on failure. */
int gw_admin_print(const char *data, size_t len);

#endif
