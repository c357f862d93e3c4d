/* `shardgate serve` inside (docs/api.md): the state its request handlers share, and the calls
 * between the files of http/. Internal to http/: the commands see server.h only.
 * Calls go one way: routes.c -> handle_*.c -> response.c, body.c, auth.c, damage.c ->
 * request.c, and no file calls back into one that calls it (ctest ops/call_loops). */
#ifndef SHARDGATE_GW_REQUEST_H
#define SHARDGATE_GW_REQUEST_H

#include <microhttpd.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "buf.h"
#include "feed_cache.h"
#include "fileio.h"
#include "listener.h"
#include "metrics.h"
#include "notify.h"
#include "request_metrics.h"
#include "serve_options.h"
#include "store.h"
#include "topology.h"
#include "ui_health.h"
#include "view.h"
#include "worker.h"

struct gw_server {
    struct gw_serve_options opt;
    struct gw_view_slot views; /* the published view: topology, epoch_seq (docs/decisions.md §21) */
    pthread_mutex_t reload_lock; /* one reload at a time: SIGHUP and PUT take the same path */
    struct gw_worker reloader;   /* applies SIGHUP reloads off the signal thread */
    int reload_pending;          /* under reloader.lock */
    struct gw_store *store;      /* the journal and its parts, or PostgreSQL */
    struct gw_metrics metrics;
    struct gw_request_metrics requests; /* the request histograms, by route and status class */
    struct gw_feed_cache feed_cache;    /* recent pages, shared by the same questions */
    int auth;                           /* 1 when POST needs the bearer token */
    unsigned char token_digest[32];
    int admin_auth; /* 1 when --admin-token-file is set */
    unsigned char admin_digest[32];
    struct gw_listener listener;  /* accepts connections for the daemon (docs/api.md §13) */
    struct gw_heads heads;        /* the request-head deadline (--header-timeout, heads.h) */
    struct sockaddr_storage addr; /* where it listens, once bound */
    struct MHD_Daemon *daemon;
    struct gw_notify notify;        /* the service manager's READY/STOPPING/WATCHDOG (sd_notify) */
    atomic_int active;              /* requests between their first handler call and completion */
    atomic_int replayed;            /* 1 once the journal is replayed and the epoch written */
    atomic_int draining;            /* 1 after SIGTERM/SIGINT: answers close their connection */
    _Atomic uint64_t body_inflight; /* body bytes held or reserved by requests */
    double started_s;               /* Unix time the process started serving (process_*) */
    struct gw_ui_config ui;         /* the status page's policy and /ui/config.json */
};

enum gw_phase { GW_PHASE_NEW, GW_PHASE_BODY, GW_PHASE_COMMITTING, GW_PHASE_ANSWERED };

/* Why a body is being read and dropped instead of kept (answered once it has ended). */
enum gw_body_drop { GW_BODY_KEPT, GW_BODY_TOO_LARGE, GW_BODY_OVER_BUDGET, GW_BODY_NO_MEMORY };

struct gw_req;
/* Frees what one part of http/ gave a request (body.c, handle_post.c, handle_feed.c). */
typedef void (*gw_req_end_fn)(struct gw_req *r);
#define GW_REQ_ON_END_MAX 4 /* the parts that register one: three */

/* One request, from its first handler call to MHD's completion notice. */
struct gw_req {
    struct gw_server *srv;
    struct MHD_Connection *conn;
    struct gw_view *view; /* the view this request uses whole, one reference until completion */
    uint64_t start_ns;
    char method[16];
    char path[256];
    const struct gw_route *route; /* NULL until routed (a stream route at the first call) */
    unsigned route_slot;          /* its slot in the request metrics (GW_ROUTE_SLOTS - 1: none) */
    int counts_batch;             /* its answer counts in the batch metrics (POST /v1/batches) */
    enum gw_phase phase;
    unsigned status;
    /* a request body (POST /v1/batches, PUT /v1/admin/membership: body.c) */
    struct gw_buf body;
    enum gw_body_drop drop;
    uint64_t dropped;     /* body bytes read and dropped (see drop) */
    uint64_t charged;     /* bytes of --max-body-inflight this request holds */
    uint64_t deadline_ns; /* the body must be complete by then (--body-timeout) */
    int deadline_armed;   /* the connection's timeout is that deadline, not --timeout */
    /* the access log and the batch metrics (a POST's, or a stored receipt's read) */
    char batch_id[GW_BATCH_ID_MAX + 1];
    size_t changes;
    int over_capacity; /* the receipt names a shard over its capacity */
    enum gw_batch_result result;
    struct gw_post *post;     /* a POST's batch once parsed (handle_post.c), NULL otherwise */
    struct gw_feed_req *feed; /* a feed request's state (handle_feed.c), NULL otherwise */
    gw_req_end_fn on_end[GW_REQ_ON_END_MAX]; /* what frees the above, run at completion */
    size_t n_on_end;
};

/* Registers fn to run once at the request's completion, after its log line (nginx's
 * r->cleanup): each part that gives a request something to free registers its own release,
 * so request.c names none of them. A second registration of the same fn is a no-op. */
void gw_req_on_end(struct gw_req *r, gw_req_end_fn fn);

/* The MHD callbacks (cls is the gw_server): routes.c and request.c. */
enum MHD_Result gw_serve_access(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version, const char *data,
                                size_t *size, void **con_cls);
void gw_serve_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                        enum MHD_RequestTerminationCode toe);
/* The request's framing (framing.c, docs/api.md §1): 0 when it may be read, else the status to
 * refuse it with (501 a Transfer-Encoding other than chunked; 400 Transfer-Encoding beside
 * Content-Length, Content-Lengths that differ, one that is not digits) and *msg. */
unsigned gw_framing_fault(struct MHD_Connection *conn, const char **msg);
/* MHD's URI log callback (routes.c): sees the request target before it is percent-decoded, and
 * returns gw_bad_path as the request's first state when its path holds an encoded NUL or control
 * byte, which decoding would cut short or smuggle into a route; the request is answered 400
 * invalid_path (docs/api.md §1). NULL otherwise. */
void *gw_serve_path_seen(void *cls, const char *uri, struct MHD_Connection *conn);
extern void *const gw_bad_path;

/* The ring drawn (docs/tools.md §1.3): GET /v1/ring?format=svg and a dry run's. */
#define GW_SVG_TYPE "image/svg+xml"

/* Queues `body` (taken over, even on failure) with status and content type, plus one optional
 * header (name NULL for none). */
enum MHD_Result gw_serve_respond(struct gw_req *r, unsigned status, const char *content_type,
                                 struct gw_buf *body, const char *header, const char *value);

/* The status page's policy (docs/api.md §19): its own scripts, styles and API only; never
 * framed. */
/* Queues a 200 of static bytes compiled into the program (the status page's assets), with the
 * page's Content-Security-Policy, nosniff, no referrer and Cache-Control: no-cache. */
enum MHD_Result gw_serve_static(struct gw_req *r, const char *content_type, const void *data,
                                size_t len);

/* Queues a shared feed page (its reference taken over, dropped when sent) as a 200. */
enum MHD_Result gw_serve_respond_page(struct gw_req *r, const char *content_type,
                                      struct gw_feed_body *page, const char *header,
                                      const char *value);

/* Counts a POST /v1/batches result and the request duration in the metrics (once). */
void gw_serve_count(struct gw_req *r);

/* Queues a JSON body (taken over) with status and no extra header. */
enum MHD_Result gw_serve_json(struct gw_req *r, unsigned status, struct gw_buf *body);

/* Appends an error body (problem.c, docs/api.md §1): the gateway's form, or RFC 9457 problem
 * details when the request's Accept names application/problem+json. Returns the Content-Type
 * that goes with it. */
const char *gw_serve_error_body(struct gw_req *r, struct gw_buf *out, unsigned status,
                                const char *code, const char *message, const char *path);
/* Queues the error body of docs/api.md §1 with an optional extra header. */
enum MHD_Result gw_serve_error(struct gw_req *r, unsigned status, const char *code,
                               const char *message, const char *path, const char *header,
                               const char *value);

/* params.c (docs/api.md §1.1): a query parameter or header `name`. 0 with *value NULL when it is
 * absent, 0 with the value, or -EINVAL when the value holds a NUL byte. */
int gw_param_value(struct gw_req *r, enum MHD_ValueKind kind, const char *name, const char **value);
/* The query parameter `name`, as gw_param_value. */
int gw_param(struct gw_req *r, const char *name, const char **value);
/* The query parameter `name` as an integer in min..max (gw_parse_u64), `def` when absent; 0 or
 * -EINVAL. */
int gw_param_u64(struct gw_req *r, const char *name, uint64_t min, uint64_t max, uint64_t def,
                 uint64_t *out);
/* A flag parameter: absent or "0" is 0, "1" is 1; -1 for anything else. */
int gw_param_flag(struct gw_req *r, const char *name);
/* ?format=json (or absent) 0, svg 1 (the ring drawn, docs/tools.md §1.3), else -1. */
int gw_param_svg(struct gw_req *r);

/* 1 when the Authorization header is "Bearer <token>" whose SHA-256 is `want` (auth.c): the
 * client token's and the admin token's one check. */
int gw_serve_bearer_is(struct gw_req *r, const unsigned char want[32]);

/* 1 when the request may proceed: no token is configured, or its bearer token is right. */
int gw_serve_authorized(struct gw_req *r);
/* 1 when the route may be called: open to anyone, or gw_serve_authorized. */
int gw_serve_route_authorized(struct gw_req *r, const struct gw_route *route);
/* 401 unauthorized with WWW-Authenticate: Bearer. */
enum MHD_Result gw_serve_unauthorized(struct gw_req *r);

/* The body of POST /v1/batches (body.c). Reserves a declared length in the in-flight
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

/* Who may call an endpoint while a token is configured (docs/api.md §11). */
enum gw_access {
    GW_ACCESS_TOKEN,        /* the bearer token */
    GW_ACCESS_OPEN,         /* anyone: the probes */
    GW_ACCESS_METRICS_OPEN, /* anyone with --metrics-open, else the token */
    GW_ACCESS_ADMIN,        /* the admin token only, checked by the handler (403 / 401) */
};

/* Answers a complete request; `rest` is the path after a prefix route's prefix ("" else). */
typedef enum MHD_Result (*gw_answer_fn)(struct gw_req *r, const char *rest);
/* Takes every handler call of a request whose body it reads as it comes. */
typedef enum MHD_Result (*gw_stream_fn)(struct gw_req *r, const char *data, size_t *size);

/* One line of the route table (routes.c): the only list of endpoints. */
struct gw_route {
    const char *method; /* "GET" answers HEAD too */
    const char *path;
    int prefix; /* 1: path is a prefix followed by at least one byte */
    enum gw_access access;
    gw_answer_fn answer; /* exactly one of answer and stream */
    gw_stream_fn stream;
    const char *label; /* the `route` label of its metrics (docs/api.md §8) */
};

/* Every slot's labels in the request metrics (routes.c), taken once at the start. */
void gw_route_labels(struct gw_route_label labels[GW_ROUTE_SLOTS]);

/* The handlers (one file per family): handle_read.c, handle_probe.c, handle_post.c. */
enum MHD_Result gw_handle_ring(struct gw_req *r, const char *rest);
enum MHD_Result gw_handle_lookup(struct gw_req *r, const char *rest);
enum MHD_Result gw_handle_shards(struct gw_req *r, const char *rest);
enum MHD_Result gw_handle_batch(struct gw_req *r, const char *rest);
enum MHD_Result gw_handle_livez(struct gw_req *r, const char *rest);
enum MHD_Result gw_handle_readyz(struct gw_req *r, const char *rest);
enum MHD_Result gw_handle_ui(struct gw_req *r, const char *rest);
enum MHD_Result gw_handle_metrics(struct gw_req *r, const char *rest);
enum MHD_Result gw_handle_post_batches(struct gw_req *r, const char *data, size_t *size);
enum MHD_Result gw_handle_epochs(struct gw_req *r, const char *rest);
enum MHD_Result gw_handle_moves(struct gw_req *r, const char *rest);
/* GET /v1/shards/{id}/moves: the moves of shard `id` (docs/api.md §20). */
enum MHD_Result gw_handle_shard_moves(struct gw_req *r, const char *id, size_t len);
enum MHD_Result gw_handle_admin_membership(struct gw_req *r, const char *data, size_t *size);
enum MHD_Result gw_handle_admin_membership_get(struct gw_req *r, const char *rest);
/* The feed (handle_feed.c, docs/api.md §17 and §18); gw_feed_req_free at completion. */
enum MHD_Result gw_handle_receipts(struct gw_req *r, const char *rest);
enum MHD_Result gw_handle_shard_path(struct gw_req *r, const char *rest);

/* The answer to a read of batch `id`'s stored receipt (handle_read.c), rc and `miss` as
 * gw_store_read_receipt gives them: `body` (the receipt) and a newline with status 200 and one
 * optional header (docs/api.md §3 and §4), or why there is none. */
enum MHD_Result gw_answer_read(struct gw_req *r, const char *id, int rc, struct gw_buf *body,
                               const struct gw_store_miss *miss, const char *header,
                               const char *value);

/* --store postgres (epoch_hooks.c, docs/journal.md §10): `o`'s adopt (the database's latest epoch
 * replaces `topo` at start) and publish (another replica's epochs, under reload_lock). */
void gw_serve_epoch_hooks(struct gw_server *s, struct gw_store_options *o,
                          struct gw_topology *topo);
/* Publishes every epoch the store recorded after ours (--store postgres: another replica's),
 * so a change is judged against the latest (docs/api.md §15). Under reload_lock. 0 or as
 * gw_store_catch_up. */
int gw_serve_catch_up(struct gw_server *s, struct gw_error *err);

/* A journal line read for an answer failed its check (damage.c, docs/journal.md §2.1): counts
 * it (/readyz unready from then on), logs `record_checksum_failed` and answers 500
 * record_corrupt naming the seq, the segment file and the offset. rc: the read's error
 * (-EBADMSG, -ENOMSG, -EILSEQ). */
enum MHD_Result gw_serve_record_damage(struct gw_req *r, uint64_t segment, uint64_t offset,
                                       uint64_t seq, int rc);

/* A --store postgres receipt row that failed its check when read (docs/journal.md §10): counted,
 * logged and answered 500 record_corrupt with `msg` (the store's), never its bytes. */
enum MHD_Result gw_serve_row_damage(struct gw_req *r, const char *msg);

/* The index placed a batch at a sound journal record of another batch or fingerprint (damage.c,
 * docs/journal.md §9): logs `index_mismatch` and answers 500 index_corrupt naming the batch, the
 * seq and the line, and the repair. */
enum MHD_Result gw_serve_index_mismatch(struct gw_req *r, const char *id,
                                        const struct gw_store_miss *miss);

/* 1 when /readyz answers 200: journal replayed and writable, no damaged line met, ring
 * non-empty. */
int gw_serve_ready(struct gw_server *s);

/* Request lifetime (request.c). */
struct gw_req *gw_req_new(struct gw_server *s, struct MHD_Connection *conn, const char *url,
                          const char *method);

/* The apply path of both reloads (reload.c, docs/api.md §15). */
enum gw_reload_verdict { GW_RELOAD_APPLIED, GW_RELOAD_UNCHANGED, GW_RELOAD_REFUSED };
struct gw_reload {
    enum gw_epoch_source source;
    const char *if_match;    /* PUT: its If-Match header (if_match.h); NULL: no precondition */
    const char *shards_text; /* PUT: the document to write to --shards; NULL: SIGHUP */
    size_t shards_len;
    int dry_run;         /* PUT ?dry_run=1: the plan into `plan`, nothing changes */
    int svg;             /* with dry_run, &format=svg: the plan drawn (docs/tools.md §1.3) */
    double max_movement; /* PUT ?max_movement=F (0..1), < 0 when absent */
    int force;           /* PUT &force=1: apply past max_movement */
    struct gw_buf *plan; /* out: the plan JSON (dry_run, or refused past max_movement) */
    int exceeded;        /* refused: the plan moves more than max_movement */
    /* out */
    enum gw_reload_verdict verdict;
    int stale;                   /* refused because if_match is not the current epoch */
    int no_online;               /* refused because no shard is online */
    struct gw_epoch_entry entry; /* the epoch in force after the call */
};
/* A PUT's shards file staged (gw_file_stage) on its own thread while the ring is built
 * (docs/decisions.md §6), installed after the epoch record (docs/journal.md §11). */
struct gw_shards_write {
    pthread_t thread;
    int threaded; /* 0: the write ran on the caller's thread (or was joined) */
    const char *path, *text;
    size_t len;
    struct gw_durable_file file;
    int rc; /* gw_file_stage's */
};
/* Starts staging `text` (kept alive by the caller until the abandon) for `path`; when no thread
 * can be started, stages it before returning. */
void gw_shards_write_start(struct gw_shards_write *w, const char *path, const char *text,
                           size_t len);
/* Joins the staging; returns 0 (the temporary file synced) or its -errno (none left). */
int gw_shards_write_wait(struct gw_shards_write *w);
/* Renames the staged file over `path` and syncs the directory. 0 or -errno. */
int gw_shards_write_install(struct gw_shards_write *w);
/* Joins the staging and removes the temporary file unless it was installed. */
void gw_shards_write_abandon(struct gw_shards_write *w);

/* A PUT's change: validates `members` (taken, freed) against the view in force under
 * reload_lock, on its contract (the one If-Match is compared with, so a PUT never reverts a
 * SIGHUP's), builds the new ring, records the epoch and publishes it in the order of
 * docs/journal.md §11. Returns 0 (verdict applied or unchanged), -EINVAL/-ESTALE refused (err
 * says why; the old view keeps serving), or -errno of the file or the store, with every file and
 * the view as before. */
int gw_reload_apply(struct gw_server *s, struct gw_membership *members, struct gw_reload *rl,
                    struct gw_error *err);
/* A reload refused before gw_reload_apply (its documents do not read): counted and logged as
 * gw_reload_apply does every outcome but a dry run's and a stale If-Match's. */
void gw_reload_refused(struct gw_server *s, enum gw_epoch_source source,
                       const struct gw_error *err);
/* SIGHUP: under reload_lock, re-reads --conf and --shards and applies them as a PUT is. */
void gw_reload_from_files(struct gw_server *s);
/* Starts and stops the thread that runs SIGHUP reloads. */
int gw_reloader_start(struct gw_server *s, struct gw_error *err);
void gw_reloader_request(struct gw_server *s);
void gw_reloader_stop(struct gw_server *s);

#endif
