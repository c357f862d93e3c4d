/* The options of `shardgate serve` (docs/tools.md): what the commands parse and the server
 * keeps. */
#ifndef SHARDGATE_GW_SERVE_OPTIONS_H
#define SHARDGATE_GW_SERVE_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "batch.h"

#define GW_MAX_BODY_DEFAULT (16u << 20)
#define GW_MAX_CONNECTIONS_DEFAULT 1024
#define GW_MAX_PER_IP_DEFAULT 256
#define GW_TIMEOUT_DEFAULT 30
#define GW_HEADER_TIMEOUT_DEFAULT 10
#define GW_DRAIN_TIMEOUT_S 30
#define GW_MAX_BODY_INFLIGHT_DEFAULT (256ull << 20)
#define GW_BODY_TIMEOUT_DEFAULT 60
#define GW_MAX_WATCHERS_DEFAULT 256
#define GW_FEED_MEMORY_DEFAULT (64u << 20)

struct gw_serve_options {
    const char *conf, *shards, *state_dir, *listen, *token_file;
    const char *admin_token_file; /* PUT /v1/admin/membership (docs/api.md §15); NULL: 403 */
    uint64_t max_body;
    size_t max_changes;
    unsigned threads;
    unsigned max_connections, max_per_ip, timeout_s;
    unsigned header_timeout_s;       /* a request head not complete this long is cut (heads.h) */
    uint64_t max_body_inflight;      /* body bytes all requests may hold at once */
    unsigned body_timeout_s;         /* a body not complete this long after its headers is cut */
    int metrics_open;                /* 1: /metrics needs no token */
    int no_token;                    /* 1: no token_file is wanted (warned at start) */
    uint64_t segment_bytes;          /* rotate the journal at this size (docs/journal.md §6) */
    uint64_t checkpoint_interval_ms; /* docs/journal.md §7 */
    uint64_t idempotency_window_ms;  /* 0: batch ids remembered for ever (docs/api.md §3) */
    unsigned max_watchers;           /* feed requests at once (docs/api.md §17) */
    uint64_t scrub_rate;             /* journal bytes the scrub reads a second, 0: none */
    size_t feed_memory;              /* bytes of feed pages held at once (docs/api.md §17) */
    const char *store;      /* NULL or "file": the journal in state_dir; else a postgres:// URL */
    const char *read_store; /* --store postgres: the reads' database (a standby), else NULL */
    const char *health_url; /* the health service the status page reads and links, or NULL */
};

#endif
