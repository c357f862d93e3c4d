/* `shardgate serve` from start to stop: token, topology, journal replay, the MHD daemon, and a
 * drain on SIGTERM/SIGINT (docs/api.md §13). With the commands, the only place of the service
 * that picks exit codes. */
#include "server.h"

#include <assert.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "exit.h"
#include "http.h"
#include "listener.h"
#include "log.h"
#include "notify.h"
#include "number.h"
#include "request.h"
#include "timing.h"
#include "token.h"

/* Each connection's libmicrohttpd pool: the request's headers and the library's buffers. The
 * library clears the whole pool after every request of a kept-alive connection, so its size is
 * paid per request (docs/decisions.md §17); a request whose headers pass it is 431. */
#define GW_CONNECTION_MEMORY (64 * 1024)

/* A token file others may read is a secret others may know: said once, at start. */
static void warn_token_readable(const char *path, mode_t mode)
{
    struct gw_buf f;
    char m[8];
    gw_buf_init(&f);
    gw_log_str(&f, "file", path);
    snprintf(m, sizeof(m), "%04o", (unsigned)(mode & 07777));
    gw_log_str(&f, "mode", m);
    gw_log_str(&f, "warning", "the token file is readable by group or others: chmod 600 it");
    gw_log_event("token_file_readable", &f);
}

static int load_token(const char *path, unsigned char digest[GW_TOKEN_DIGEST_LEN])
{
    struct gw_error err;
    mode_t mode = 0;
    int rc = gw_token_load(path, digest, &mode, &err);
    if (rc != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return rc == -ENOMEM ? GW_EXIT_INTERNAL : GW_EXIT_UNUSABLE;
    }
    if (mode & (S_IRGRP | S_IROTH))
        warn_token_readable(path, mode);
    return GW_EXIT_OK;
}

/* --no-token: every client that reaches the address is served; said once, as it listens
 * (docs/api.md §11). */
static void warn_no_token(const char *address)
{
    struct gw_buf f;
    gw_buf_init(&f);
    gw_log_str(&f, "address", address);
    gw_log_str(&f, "warning",
               "--no-token: every client that reaches this address may POST batches and read "
               "receipts; give --token-file FILE to require a token");
    gw_log_event("serving_without_token", &f);
}

/* The client token and the admin token (docs/api.md §11, §15); they must differ. */
static int load_tokens(struct gw_server *s)
{
    int rc = GW_EXIT_OK;
    if (s->opt.token_file && (rc = load_token(s->opt.token_file, s->token_digest)) == GW_EXIT_OK)
        s->auth = 1;
    if (rc == GW_EXIT_OK && s->opt.admin_token_file &&
        (rc = load_token(s->opt.admin_token_file, s->admin_digest)) == GW_EXIT_OK)
        s->admin_auth = 1;
    if (rc == GW_EXIT_OK && s->auth && s->admin_auth &&
        memcmp(s->token_digest, s->admin_digest, sizeof(s->admin_digest)) == 0) {
        fprintf(stderr, "token: %s: the admin token must differ from the client token (%s)\n",
                s->opt.admin_token_file, s->opt.token_file);
        return GW_EXIT_UNUSABLE;
    }
    return rc;
}

/* The first view: the files' topology, at the journal's latest epoch_seq. */
static int publish_first_view(struct gw_server *s, struct gw_topology *topo)
{
    struct gw_epoch_entry latest;
    struct gw_error err;
    struct gw_view *v;
    int has = gw_chain_latest(gw_store_chain(s->store), &latest);
    assert(has && strcmp(latest.epoch, topo->epoch) == 0); /* written at start if it differed */
    (void)has;
    if (gw_view_new(&s->views, topo, latest.epoch_seq, gw_store_ledger(s->store), &v, &err) != 0) {
        fprintf(stderr, "shardgate: %s\n", err.msg);
        return GW_EXIT_INTERNAL;
    }
    gw_view_publish(&s->views, v);
    atomic_store(&s->metrics.epoch_seq, latest.epoch_seq);
    return GW_EXIT_OK;
}

static unsigned commit_delay_ms(void)
{
    const char *v = getenv("SHARDGATE_TEST_COMMIT_DELAY_MS"); /* test only: see docs/api.md */
    uint64_t ms = 0;
    if (v && gw_parse_u64(v, 0, 60000, &ms) == 0 && ms > 0) {
        struct gw_buf f;
        gw_buf_init(&f);
        gw_log_str(&f, "warning", "SHARDGATE_TEST_COMMIT_DELAY_MS is set");
        gw_log_event("test_commit_delay", &f);
    }
    return (unsigned)ms;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    struct gw_buf f;
    gw_buf_init(&f);
    gw_log_vformat(&f, "message", fmt, ap); /* whole, however long */
    gw_log_event("mhd", &f);
}

static void connection_notified(void *cls, struct MHD_Connection *conn, void **socket_context,
                                enum MHD_ConnectionNotificationCode code)
{
    struct gw_server *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        gw_heads_opened(&s->heads, conn, socket_context);
        return;
    }
    gw_heads_closed(&s->heads, socket_context);
    gw_listener_closed(&s->listener);
}

/* Binds the listening socket first of all, so that an address in use writes nothing to the
 * state dir (docs/api.md, exit codes). It listens only once the daemon starts: until then a
 * client (a proxy's health check) is refused at once instead of waiting unanswered. */
static int open_listener(struct gw_server *s)
{
    struct gw_error err;
    if (gw_http_parse_listen(s->opt.listen, &s->addr, &err) != 0) {
        fprintf(stderr, "shardgate: %s\n", err.msg);
        return GW_EXIT_USAGE;
    }
    if (gw_listener_open(&s->listener, &s->addr, &err) != 0) {
        fprintf(stderr, "shardgate: cannot listen on %s: %s\n", s->opt.listen, err.msg);
        return GW_EXIT_INTERNAL;
    }
    return GW_EXIT_OK;
}

static int start_daemon(struct gw_server *s)
{
    /* Connections come from the listener's thread (listener.h says why), which counts them
     * against --max-connections; every worker may hold all of them (docs/decisions.md §20). */
    unsigned daemon_limit = s->opt.max_connections * s->opt.threads;
    if (gw_heads_start(&s->heads, s->opt.header_timeout_s, &s->metrics) != 0) {
        fprintf(stderr, "shardgate: cannot start the request-head deadline's thread\n");
        return GW_EXIT_INTERNAL;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
    s->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, gw_serve_access, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_THREAD_POOL_SIZE, s->opt.threads, MHD_OPTION_CONNECTION_LIMIT, daemon_limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, s->opt.max_per_ip, MHD_OPTION_CONNECTION_TIMEOUT,
        s->opt.timeout_s, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)GW_CONNECTION_MEMORY,
        MHD_OPTION_NOTIFY_COMPLETED, gw_serve_completed, s, MHD_OPTION_URI_LOG_CALLBACK,
        gw_serve_path_seen, s, MHD_OPTION_NOTIFY_CONNECTION, connection_notified, s,
        MHD_OPTION_END);
    if (!s->daemon) {
        fprintf(stderr, "shardgate: cannot start the HTTP threads\n");
        return GW_EXIT_INTERNAL;
    }
    int rc = gw_listener_start(&s->listener, s->daemon, s->opt.max_connections, &s->heads);
    if (rc != 0) {
        fprintf(stderr, "shardgate: cannot listen on %s: %s\n", s->opt.listen, strerror(-rc));
        return GW_EXIT_INTERNAL;
    }
    char address[GW_HTTP_ADDRESS_MAX];
    gw_http_format_address(&s->addr, address);
    if (!s->auth)
        warn_no_token(address);
    struct gw_buf f;
    gw_buf_init(&f);
    gw_log_str(&f, "address", address);
    gw_log_event("listening", &f);
    socklen_t len =
        s->addr.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    if (gw_notify_ready(&s->notify, (struct sockaddr *)&s->addr, len) != 0) {
        fprintf(stderr, "shardgate: cannot start the watchdog thread\n");
        return GW_EXIT_INTERNAL;
    }
    return GW_EXIT_OK;
}

/* Stops taking connections, lets requests in progress finish (their receipts are journaled
 * by the writer, which is still running), then stops the writer: from then on a POST racing
 * the shutdown on a kept-alive connection is refused (503), its mutex still alive. Then the
 * HTTP daemon stops (every handler thread joined) and only then is the committer destroyed
 * (docs/operations.md, Shutdown). */
static void drain(struct gw_server *s)
{
    atomic_store(&s->draining, 1);
    gw_feed_watch_stop(
        gw_store_watch(s->store));   /* waiting feed requests answer now, and no more wait */
    gw_reloader_stop(s);             /* a reload in progress finishes first */
    gw_listener_close(&s->listener); /* new connections are refused from here */
    unsigned waited = 0;
    while (atomic_load(&s->active) > 0 && waited < GW_DRAIN_TIMEOUT_S * 1000) {
        gw_sleep_ms(10);
        waited += 10;
    }
    struct gw_buf f;
    gw_buf_init(&f);
    int left = atomic_load(&s->active);
    gw_log_u64(&f, "in_flight_left", left > 0 ? (uint64_t)left : 0);
    gw_log_u64(&f, "waited_ms", waited);
    gw_log_event("drained", &f);
    gw_store_stop(s->store);
    MHD_stop_daemon(s->daemon);
    s->daemon = NULL;
}

/* Waits for SIGTERM or SIGINT; a SIGHUP asks the reloader for a reload (docs/api.md §15). */
static int wait_for_signal(struct gw_server *s, const sigset_t *set)
{
    int sig = 0;
    for (;;) {
        if (sigwait(set, &sig) != 0)
            continue;
        if (sig != SIGHUP)
            return sig;
        if (gw_store_holds_membership(s->store))
            gw_log_event("sighup_ignored", NULL); /* no file to read it from */
        else
            gw_reloader_request(s);
    }
}

/* The store opened: the state dir's replayed and the epoch journaled, or the database's
 * epoch adopted. Returns an exit code. */
static int open_store(struct gw_server *s, const struct gw_store_options *o,
                      struct gw_topology *topo)
{
    struct gw_error err;
    int rc = gw_store_open(s->store, o, topo, &s->metrics, &err);
    if (rc != 0)
        fprintf(stderr, "%s\n", err.msg);
    return gw_exit_of_open(rc);
}

/* Sets everything up in order; returns GW_EXIT_OK to serve, else the exit code. */
static int setup(struct gw_server *s)
{
    struct gw_topology topo;
    memset(&topo, 0, sizeof(topo));
    int rc = open_listener(s);
    if (rc == GW_EXIT_OK)
        rc = load_tokens(s);
    if (rc == GW_EXIT_OK)
        rc = gw_exit_load_topology(s->opt.conf, s->opt.shards, &topo);
    if (rc != GW_EXIT_OK)
        return rc;
    gw_metrics_init(&s->metrics);
    gw_request_metrics_init(&s->requests);
    gw_route_labels(s->requests.labels);
    gw_ui_config_make(&s->ui, s->opt.health_url);
    struct gw_error err;
    struct gw_store_options o = {.url = s->opt.store,
                                 .read_url = s->opt.read_store,
                                 .state_dir = s->opt.state_dir,
                                 .segment_bytes = s->opt.segment_bytes,
                                 .checkpoint_interval_ms = s->opt.checkpoint_interval_ms,
                                 .idempotency_window_ms = s->opt.idempotency_window_ms,
                                 .scrub_rate = s->opt.scrub_rate,
                                 .max_watchers = s->opt.max_watchers,
                                 .commit_delay_ms = commit_delay_ms()};
    gw_serve_epoch_hooks(s, &o, &topo);
    rc = open_store(s, &o, &topo);
    if (rc == GW_EXIT_OK)
        rc = publish_first_view(s, &topo); /* takes topo */
    if (rc != GW_EXIT_OK) {
        gw_topology_free(&topo);
        return rc;
    }
    if (gw_store_start(s->store, &o, &s->metrics, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return GW_EXIT_INTERNAL;
    }
    if (!gw_store_holds_membership(s->store) && gw_reloader_start(s, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return GW_EXIT_INTERNAL;
    }
    atomic_store(&s->replayed, 1);
    return start_daemon(s);
}

static void teardown(struct gw_server *s)
{
    gw_reloader_stop(s);
    gw_store_stop(s->store);
    gw_listener_close(&s->listener);
    if (s->daemon)
        MHD_stop_daemon(s->daemon);
    gw_heads_stop(&s->heads); /* every connection closed */
    gw_feed_cache_free(&s->feed_cache);
    gw_store_close(s->store); /* its listener publishes views until then */
    gw_view_slot_free(&s->views);
    gw_metrics_free(&s->metrics);
}

/* Every thread started after this inherits the mask, so only sigwait() sees the signals. */
static void block_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN); /* a file size limit makes write() fail with EFBIG instead */
}

int gw_server_run(const struct gw_serve_options *opt)
{
    static struct gw_server server; /* one per process; MHD threads point into it */
    struct gw_server *s = &server;
    /* Every allocation of 1 MiB or more (a large batch's buffers, a large feed page) is a
     * mapping of its own, returned to the system when freed; glibc would otherwise raise this
     * threshold to the size of each large block freed and keep the next ones in its heap
     * (docs/decisions.md §24). */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    memset(s, 0, sizeof(*s));
    s->opt = *opt;
    s->started_s = gw_unix_s();
    sigset_t set;
    block_signals(&set);
    if (gw_store_new(&s->store) != 0) {
        fprintf(stderr, "shardgate: out of memory\n");
        return GW_EXIT_INTERNAL;
    }
    gw_view_slot_init(&s->views);
    gw_feed_cache_init(&s->feed_cache, s->opt.feed_memory);
    int rc = setup(s);
    if (rc == GW_EXIT_OK) {
        int sig = wait_for_signal(s, &set);
        struct gw_buf f;
        gw_buf_init(&f);
        gw_log_str(&f, "signal", sig == SIGINT ? "SIGINT" : "SIGTERM");
        gw_log_event("stopping", &f);
        gw_notify_stopping(&s->notify);
        drain(s);
    }
    teardown(s);
    if (rc == GW_EXIT_OK)
        gw_log_event("stopped", NULL);
    return rc;
}
