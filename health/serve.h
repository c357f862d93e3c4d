/* The HTTP face of the health service: GET /healthz (health+json) and GET /livez. */
#ifndef HC_SERVE_H
#define HC_SERVE_H

#include <stddef.h>
#include <sys/socket.h>

#include "error.h"
#include "files.h"
#include "segment.h"
#include "verify.h"

struct hc_server;

struct hc_serve_config {
    const char *listen;    /* "IPv4:port" */
    const char *journal;   /* journal.jsonl path, or NULL with store */
    const char *store;     /* a postgres:// URL (docs/operations.md §1.7), or NULL */
    struct hc_files files; /* the contract + shards files, as loaded into own */
    struct hc_epoch *own;  /* what they held; taken over by the server (left zeroed) */
    size_t n_criteria;     /* how much of the criteria table runs */
    size_t max_changes;    /* the gateway's --max-changes */
    unsigned reverify_s;   /* seconds between full re-verifications (and the torn-tail age) */
    struct hc_seg_options segments; /* --archive-dir, --accept-archived */
    const char *allow_origin;       /* --allow-origin: the origin that may read /healthz, or NULL */
};

/* 1 when text is "http://HOST[:PORT]" or "https://HOST[:PORT]" (--allow-origin), else 0. */
int hc_is_origin(const char *text);

/* Parses "IPv4:PORT" or "[IPv6]:PORT" (docs/operations.md §1.1). Returns 0 or -EINVAL with err
 * filled. */
int hc_parse_listen(const char *text, struct sockaddr_storage *out, struct hc_err *err);

/* Starts listening (a thread per connection; /healthz requests verify one at a time). Returns 0,
 * or a negative errno-style code with err filled. */
int hc_serve_start(const struct hc_serve_config *cfg, struct hc_server **out, struct hc_err *err);
void hc_serve_stop(struct hc_server *s);

#endif
