/* `shardgate serve` (docs/api.md): the state its request handlers share, and their entry
 * points. Internal to the serve_*.c files. */
#ifndef SHARDGATE_GW_SERVE_H
#define SHARDGATE_GW_SERVE_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "buf.h"
#include "commit.h"
#include "idempotency.h"
#include "journal.h"
#include "ledger.h"
#include "metrics.h"
#include "topology.h"

#define GW_MAX_BODY_DEFAULT (16u << 20)
#define GW_MAX_CONNECTIONS_DEFAULT 1024
#define GW_MAX_PER_IP_DEFAULT 256
#define GW_TIMEOUT_DEFAULT 30
#define GW_DRAIN_TIMEOUT_S 30
#define GW_MAX_BODY_INFLIGHT_DEFAULT (256ull << 20)
#define GW_BODY_TIMEOUT_DEFAULT 60

struct gw_serve_options {
    const char *conf, *shards, *state_dir, *listen, *token_file;
    uint64_t max_body;
    size_t max_changes;
    unsigned threads;
    unsigned max_connections, max_per_ip, timeout_s;
    uint64_t max_body_inflight; /* body bytes all requests may hold at once */
    unsigned body_timeout_s;    /* a body not complete this long after its headers is cut */
    int metrics_open;           /* 1: /metrics needs no token */
};

struct gw_server {
    struct gw_serve_options opt;
    struct gw_topology topo;
    struct gw_journal journal;
    struct gw_committer committer;
    struct gw_idem idem;
    struct gw_ledger ledger;
    struct gw_metrics metrics;
    int auth; /* 1 when POST needs the bearer token */
    unsigned char token_digest[32];
    struct MHD_Daemon *daemon;
    atomic_int active;              /* requests between their first handler call and completion */
    atomic_int replayed;            /* 1 once the journal is replayed and the epoch written */
    atomic_int draining;            /* 1 after SIGTERM/SIGINT: answers close their connection */
    _Atomic uint64_t body_inflight; /* body bytes held or reserved by requests */
};

enum gw_route {
    GW_ROUTE_OTHER, /* answered by route() once the request is complete */
    GW_ROUTE_POST_BATCHES,
};

enum gw_phase { GW_PHASE_NEW, GW_PHASE_BODY, GW_PHASE_COMMITTING, GW_PHASE_ANSWERED };

/* Why a body is being read and dropped instead of kept (answered once it has ended). */
enum gw_body_drop { GW_BODY_KEPT, GW_BODY_TOO_LARGE, GW_BODY_OVER_BUDGET, GW_BODY_NO_MEMORY };

/* One request, from its first handler call to MHD's completion notice. */
struct gw_req {
    struct gw_server *srv;
    struct MHD_Connection *conn;
    uint64_t start_ns;
    char method[16];
    char path[256];
    enum gw_route route;
    enum gw_phase phase;
    unsigned status;
    /* POST /v1/batches */
    struct gw_buf body;
    enum gw_body_drop drop;
    uint64_t dropped;     /* body bytes read and dropped (see drop) */
    uint64_t charged;     /* bytes of --max-body-inflight this request holds */
    uint64_t deadline_ns; /* the body must be complete by then (--body-timeout) */
    char batch_id[GW_BATCH_ID_MAX + 1];
    size_t changes;
    int counted;
    enum gw_batch_result result;
    unsigned char fingerprint[GW_FINGERPRINT_LEN];
    struct gw_buf receipt;  /* the receipt bytes, then "\n" once durable */
    struct gw_tally *tally; /* this batch's per-shard tallies, added when durable */
    struct gw_commit_item item;
    atomic_int committed; /* set by the journal writer before it resumes the connection */
    int commit_rc;
};

/* The MHD callbacks (cls is the gw_server). */
enum MHD_Result gw_serve_access(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version, const char *data,
                                size_t *size, void **con_cls);
void gw_serve_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                        enum MHD_RequestTerminationCode toe);

/* Queues `body` (taken over, even on failure) with status and content type, plus one optional
 * header (name NULL for none). */
enum MHD_Result gw_serve_respond(struct gw_req *r, unsigned status, const char *content_type,
                                 struct gw_buf *body, const char *header, const char *value);

/* Counts a POST /v1/batches result and the request duration in the metrics (once). */
void gw_serve_count(struct gw_req *r);

/* Queues the error body of docs/api.md §1 with an optional extra header. */
enum MHD_Result gw_serve_error(struct gw_req *r, unsigned status, const char *code,
                               const char *message, const char *path, const char *header,
                               const char *value);

/* 1 when the request may proceed: no token is configured, or its bearer token is right. */
int gw_serve_authorized(struct gw_req *r);
/* 1 when GET `url` may be answered: an open endpoint, or gw_serve_authorized. */
int gw_serve_get_authorized(struct gw_req *r, const char *url);
/* 401 unauthorized with WWW-Authenticate: Bearer. */
enum MHD_Result gw_serve_unauthorized(struct gw_req *r);

/* The body of POST /v1/batches (serve_body.c). Reserves a declared length in the in-flight
 * budget and starts the body deadline; -EBUSY when the budget has no room for it. */
int gw_body_begin(struct gw_req *r, uint64_t declared);
/* Takes one piece of the body; MHD_NO closes the connection. */
enum MHD_Result gw_body_take(struct gw_req *r, const char *data, size_t size);
/* Answers a body that was dropped (r->drop != GW_BODY_KEPT): 413, 503 or 500. */
enum MHD_Result gw_body_refuse(struct gw_req *r);
/* Drops `size` bytes of a body no endpoint reads; MHD_NO (close) past --max-body or
 * --body-timeout. */
enum MHD_Result gw_body_ignore(struct gw_req *r, size_t size);
/* 503 body_budget_exhausted with Retry-After. */
enum MHD_Result gw_body_budget_exhausted(struct gw_req *r);
/* Frees the body and returns its share of the budget (safe at completion). */
void gw_body_release(struct gw_req *r);
/* The body has been read: gw_body_release, and the connection's usual idle timeout back.
 * From the access handler only. */
void gw_body_done(struct gw_req *r);

/* The GET endpoints; `url` is the decoded path. */
enum MHD_Result gw_serve_get(struct gw_req *r, const char *url);

/* POST /v1/batches, called for every handler call of the request. */
enum MHD_Result gw_serve_post_batches(struct gw_req *r, const char *data, size_t *size);

/* Appends a stored receipt (read from the journal) and a newline to `body`. Returns 0 or a
 * negative code. */
int gw_serve_stored_receipt(struct gw_server *s, struct gw_idem_ref ref, struct gw_buf *body);

/* 1 when /readyz answers 200: journal replayed and writable, ring non-empty. */
int gw_serve_ready(struct gw_server *s);

uint64_t gw_serve_now_ns(void);

#endif
