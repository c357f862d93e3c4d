/* `shardgate serve`: options, startup (topology, journal replay, epoch), the MHD daemon, and a
 * drain on SIGTERM/SIGINT. The only place of the service that logs or picks exit codes. */
#include "serve.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "cli.h"
#include "http.h"
#include "log.h"
#include "membership.h"
#include "token.h"

const char gw_usage_serve[] =
    "usage: shardgate serve --conf FILE --shards FILE --state-dir DIR [--listen HOST:PORT]\n"
    "                       [--token-file FILE] [--max-body BYTES] [--max-changes N]\n"
    "                       [--threads N] [--max-connections N] [--max-connections-per-ip N]\n"
    "                       [--timeout SECONDS] [--max-body-inflight BYTES]\n"
    "                       [--body-timeout SECONDS] [--metrics-open]\n"
    "Serves the HTTP API of docs/api.md; receipts are journaled in DIR/journal.jsonl.\n"
    "defaults: --listen 127.0.0.1:8080 (port 0 picks a free port), --max-body 16777216,\n"
    "          --max-changes 100000, --threads 2, --max-connections 1024,\n"
    "          --max-connections-per-ip 256, --timeout 30, --max-body-inflight 268435456,\n"
    "          --body-timeout 60. --conf defaults to $SHARDGATE_CONF.\n"
    "exit: 0 after SIGTERM/SIGINT and a drain, 3 contract/membership/journal/token unusable,\n"
    "      64 usage, 1 internal error (cannot listen, state dir unwritable).\n";

enum {
    OPT_CONF = 256,
    OPT_SHARDS,
    OPT_STATE,
    OPT_LISTEN,
    OPT_TOKEN,
    OPT_MAX_BODY,
    OPT_MAX_CHANGES,
    OPT_THREADS,
    OPT_MAX_CONN,
    OPT_MAX_PER_IP,
    OPT_TIMEOUT,
    OPT_MAX_BODY_INFLIGHT,
    OPT_BODY_TIMEOUT,
    OPT_METRICS_OPEN,
    OPT_HELP
};

static int usage_error(const char *what)
{
    fprintf(stderr, "shardgate: %s\n%s", what, gw_usage_serve);
    return GW_EXIT_USAGE;
}

/* A numeric option in min..max; returns 0 or prints why not. */
static int number_option(const char *name, const char *text, uint64_t min, uint64_t max,
                         uint64_t *out)
{
    if (gw_http_parse_u64(text, min, max, out) == 0)
        return 0;
    fprintf(stderr, "shardgate: --%s must be an integer %llu..%llu, not \"%s\"\n", name,
            (unsigned long long)min, (unsigned long long)max, text);
    return -1;
}

static int set_number(struct gw_serve_options *o, int c, const char *arg)
{
    uint64_t v;
    switch (c) {
    case OPT_MAX_BODY:
        return number_option("max-body", arg, 1, 1ULL << 32, &o->max_body);
    case OPT_MAX_BODY_INFLIGHT:
        return number_option("max-body-inflight", arg, 1, 1ULL << 40, &o->max_body_inflight);
    case OPT_BODY_TIMEOUT:
        if (number_option("body-timeout", arg, 1, 3600, &v))
            return -1;
        o->body_timeout_s = (unsigned)v;
        return 0;
    case OPT_MAX_CHANGES:
        if (number_option("max-changes", arg, 1, 10000000, &v))
            return -1;
        o->max_changes = (size_t)v;
        return 0;
    case OPT_THREADS:
        if (number_option("threads", arg, 1, 256, &v))
            return -1;
        o->threads = (unsigned)v;
        return 0;
    case OPT_MAX_CONN:
        if (number_option("max-connections", arg, 1, 100000, &v))
            return -1;
        o->max_connections = (unsigned)v;
        return 0;
    case OPT_MAX_PER_IP:
        if (number_option("max-connections-per-ip", arg, 1, 100000, &v))
            return -1;
        o->max_per_ip = (unsigned)v;
        return 0;
    default:
        if (number_option("timeout", arg, 1, 3600, &v))
            return -1;
        o->timeout_s = (unsigned)v;
        return 0;
    }
}

/* Returns -1 to go on, else the exit code. */
static int parse_options(int argc, char **argv, struct gw_serve_options *o)
{
    static const struct option options[] = {
        {"conf", required_argument, 0, OPT_CONF},
        {"shards", required_argument, 0, OPT_SHARDS},
        {"state-dir", required_argument, 0, OPT_STATE},
        {"listen", required_argument, 0, OPT_LISTEN},
        {"token-file", required_argument, 0, OPT_TOKEN},
        {"max-body", required_argument, 0, OPT_MAX_BODY},
        {"max-changes", required_argument, 0, OPT_MAX_CHANGES},
        {"threads", required_argument, 0, OPT_THREADS},
        {"max-connections", required_argument, 0, OPT_MAX_CONN},
        {"max-connections-per-ip", required_argument, 0, OPT_MAX_PER_IP},
        {"timeout", required_argument, 0, OPT_TIMEOUT},
        {"max-body-inflight", required_argument, 0, OPT_MAX_BODY_INFLIGHT},
        {"body-timeout", required_argument, 0, OPT_BODY_TIMEOUT},
        {"metrics-open", no_argument, 0, OPT_METRICS_OPEN},
        {"help", no_argument, 0, OPT_HELP},
        {0, 0, 0, 0}};
    *o = (struct gw_serve_options){.listen = "127.0.0.1:8080",
                                   .max_body = GW_MAX_BODY_DEFAULT,
                                   .max_changes = GW_MAX_CHANGES_DEFAULT,
                                   .threads = 2,
                                   .max_connections = GW_MAX_CONNECTIONS_DEFAULT,
                                   .max_per_ip = GW_MAX_PER_IP_DEFAULT,
                                   .timeout_s = GW_TIMEOUT_DEFAULT,
                                   .max_body_inflight = GW_MAX_BODY_INFLIGHT_DEFAULT,
                                   .body_timeout_s = GW_BODY_TIMEOUT_DEFAULT};
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+", options, NULL)) != -1) {
        const char **slot = c == OPT_CONF     ? &o->conf
                            : c == OPT_SHARDS ? &o->shards
                            : c == OPT_STATE  ? &o->state_dir
                            : c == OPT_LISTEN ? &o->listen
                            : c == OPT_TOKEN  ? &o->token_file
                                              : NULL;
        if (c == OPT_HELP) {
            fputs(gw_usage_serve, stdout);
            return GW_EXIT_OK;
        }
        if (c == '?')
            return usage_error("unknown option or missing value");
        if (c == OPT_METRICS_OPEN)
            o->metrics_open = 1;
        else if (slot)
            *slot = optarg;
        else if (set_number(o, c, optarg) != 0)
            return GW_EXIT_USAGE;
    }
    if (optind < argc)
        return usage_error("unexpected argument");
    o->conf = gw_conf_path(o->conf);
    if (!o->shards)
        return usage_error("--shards FILE is required");
    if (!o->state_dir)
        return usage_error("--state-dir DIR is required");
    return -1;
}

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

static int load_token(struct gw_server *s)
{
    struct gw_error err;
    mode_t mode = 0;
    int rc = gw_token_load(s->opt.token_file, s->token_digest, &mode, &err);
    if (rc != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return rc == -ENOMEM ? GW_EXIT_INTERNAL : GW_EXIT_UNUSABLE;
    }
    if (mode & (S_IRGRP | S_IROTH))
        warn_token_readable(s->opt.token_file, mode);
    s->auth = 1;
    return GW_EXIT_OK;
}

static int compare_shard_id(const void *key, const void *elem)
{
    return strcmp(key, ((const struct gw_shard *)elem)->id);
}

/* Journal replay: each receipt record feeds the idempotency table and the totals. */
static int replay_receipt(void *ctx, const struct gw_journal_record *rec, struct gw_error *err)
{
    struct gw_server *s = ctx;
    json_t *id = json_object_get(rec->receipt, "batch_id");
    json_t *shards = json_object_get(rec->receipt, "shards");
    if (!json_is_string(id) ||
        !gw_name_valid(json_string_value(id), json_string_length(id), GW_BATCH_ID_MAX) ||
        !json_is_object(shards)) {
        gw_error_set(err, "", "receipt: needs a valid batch_id and a shards object");
        return -EINVAL;
    }
    const char *shard;
    json_t *v;
    json_object_foreach(shards, shard, v)
    {
        json_t *load = json_object_get(v, "load"), *received = json_object_get(v, "received");
        if (!json_is_integer(load) || !json_is_integer(received) || json_integer_value(load) < 0 ||
            json_integer_value(received) < 0) {
            gw_error_set(err, "", "receipt: shards.%.64s: load and received must be integers",
                         shard);
            return -EINVAL;
        }
        const struct gw_shard *m = bsearch(shard, s->topo.members.shards, s->topo.members.count,
                                           sizeof(*m), compare_shard_id);
        if (m) /* shards no longer in the membership keep no totals */
            gw_ledger_add_one(&s->ledger, (size_t)(m - s->topo.members.shards),
                              (uint64_t)json_integer_value(load),
                              (uint64_t)json_integer_value(received));
    }
    struct gw_idem_ref ref = {rec->receipt_offset, rec->receipt_len};
    int rc = gw_idem_insert(&s->idem, json_string_value(id), json_string_length(id),
                            rec->fingerprint, ref);
    if (rc == -EEXIST)
        gw_error_set(err, "", "receipt: batch_id \"%s\" was already journaled",
                     json_string_value(id));
    else if (rc != 0)
        gw_error_set(err, "", "out of memory");
    return rc == -EEXIST ? -EINVAL : rc;
}

static void log_replay(const struct gw_server *s, const struct gw_journal_repair *rep,
                       int epoch_written)
{
    struct gw_buf f;
    if (rep->torn) {
        gw_buf_init(&f);
        gw_log_str(&f, "file", s->journal.path);
        gw_log_u64(&f, "line", rep->line);
        gw_log_u64(&f, "offset", rep->offset);
        gw_log_u64(&f, "bytes", rep->bytes);
        size_t n = strlen(s->journal.path) + sizeof(GW_JOURNAL_BROKEN_SUFFIX);
        char *moved_to = malloc(n);
        if (moved_to)
            snprintf(moved_to, n, "%s%s", s->journal.path, GW_JOURNAL_BROKEN_SUFFIX);
        gw_log_str(&f, "moved_to", moved_to ? moved_to : "?");
        free(moved_to);
        gw_log_event("journal_torn_tail_repaired", &f);
    }
    gw_buf_init(&f);
    gw_log_str(&f, "file", s->journal.path);
    gw_log_u64(&f, "receipts", s->journal.last_seq);
    gw_log_u64(&f, "bytes", s->journal.size);
    gw_log_bool(&f, "epoch_written", epoch_written);
    gw_log_event("journal_replayed", &f);
}

/* Opens, replays and repairs the journal, then writes the epoch if it changed. */
static int open_journal(struct gw_server *s)
{
    struct gw_error err;
    struct gw_journal_repair rep;
    int rc = gw_journal_open(&s->journal, s->opt.state_dir, replay_receipt, s, &rep, &err);
    if (rc == -EINVAL) {
        fprintf(stderr, "%s\n", err.msg);
        return GW_EXIT_UNUSABLE;
    }
    int written = 0;
    if (rc == 0)
        rc = gw_journal_write_epoch(&s->journal, &s->topo, &written, &err);
    if (rc != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return GW_EXIT_INTERNAL;
    }
    log_replay(s, &rep, written);
    return GW_EXIT_OK;
}

static unsigned commit_delay_ms(void)
{
    const char *v = getenv("SHARDGATE_TEST_COMMIT_DELAY_MS"); /* test only: see docs/api.md */
    uint64_t ms = 0;
    if (v && gw_http_parse_u64(v, 0, 60000, &ms) == 0 && ms > 0) {
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

static int start_daemon(struct gw_server *s)
{
    struct gw_error err;
    struct sockaddr_in addr;
    if (gw_http_parse_listen(s->opt.listen, &addr, &err) != 0) {
        fprintf(stderr, "shardgate: %s\n", err.msg);
        return GW_EXIT_USAGE;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG;
    s->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, gw_serve_access, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_THREAD_POOL_SIZE, s->opt.threads,
        MHD_OPTION_CONNECTION_LIMIT, s->opt.max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        s->opt.max_per_ip, MHD_OPTION_CONNECTION_TIMEOUT, s->opt.timeout_s,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(256 * 1024), MHD_OPTION_NOTIFY_COMPLETED,
        gw_serve_completed, s, MHD_OPTION_END);
    if (!s->daemon) {
        fprintf(stderr, "shardgate: cannot listen on %s\n", s->opt.listen);
        return GW_EXIT_INTERNAL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    char host[INET_ADDRSTRLEN], address[INET_ADDRSTRLEN + 8];
    inet_ntop(AF_INET, &addr.sin_addr, host, sizeof(host));
    snprintf(address, sizeof(address), "%s:%u", host,
             info ? (unsigned)info->port : (unsigned)ntohs(addr.sin_port));
    struct gw_buf f;
    gw_buf_init(&f);
    gw_log_str(&f, "address", address);
    gw_log_event("listening", &f);
    return GW_EXIT_OK;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Stops taking connections, lets requests in progress finish (their receipts are journaled
 * by the writer, which is still running), then stops the writer: from then on a POST racing
 * the shutdown on a kept-alive connection is refused (503), its mutex still alive. Then the
 * HTTP daemon stops (every handler thread joined) and only then is the committer destroyed
 * (docs/operations.md, Shutdown). */
static void drain(struct gw_server *s)
{
    atomic_store(&s->draining, 1);
    MHD_socket listen_fd = MHD_quiesce_daemon(s->daemon);
    unsigned waited = 0;
    while (atomic_load(&s->active) > 0 && waited < GW_DRAIN_TIMEOUT_S * 1000) {
        sleep_ms(10);
        waited += 10;
    }
    struct gw_buf f;
    gw_buf_init(&f);
    int left = atomic_load(&s->active);
    gw_log_u64(&f, "in_flight_left", left > 0 ? (uint64_t)left : 0);
    gw_log_u64(&f, "waited_ms", waited);
    gw_log_event("drained", &f);
    gw_committer_stop(&s->committer);
    MHD_stop_daemon(s->daemon);
    s->daemon = NULL;
    gw_committer_destroy(&s->committer);
    if (listen_fd != MHD_INVALID_SOCKET)
        close(listen_fd);
}

static int wait_for_signal(const sigset_t *set)
{
    int sig = 0;
    while (sigwait(set, &sig) != 0)
        ;
    return sig;
}

/* Sets everything up in order; returns GW_EXIT_OK to serve, else the exit code. */
static int setup(struct gw_server *s)
{
    int rc = s->opt.token_file ? load_token(s) : GW_EXIT_OK;
    if (rc == GW_EXIT_OK)
        rc = gw_cli_load_topology(s->opt.conf, s->opt.shards, &s->topo);
    if (rc != GW_EXIT_OK)
        return rc;
    gw_metrics_init(&s->metrics);
    if (gw_idem_init(&s->idem) != 0 || gw_ledger_init(&s->ledger, s->topo.members.count) != 0) {
        fprintf(stderr, "shardgate: out of memory\n");
        return GW_EXIT_INTERNAL;
    }
    rc = open_journal(s);
    if (rc != GW_EXIT_OK)
        return rc;
    struct gw_error err;
    if (gw_committer_start(&s->committer, &s->journal, &s->metrics, commit_delay_ms(), &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return GW_EXIT_INTERNAL;
    }
    atomic_store(&s->replayed, 1);
    return start_daemon(s);
}

static void teardown(struct gw_server *s)
{
    gw_committer_stop(&s->committer);
    if (s->daemon)
        MHD_stop_daemon(s->daemon);
    gw_committer_destroy(&s->committer);
    if (s->journal.path)
        gw_journal_close(&s->journal);
    gw_idem_free(&s->idem);
    gw_ledger_free(&s->ledger);
    if (s->topo.ring)
        gw_topology_free(&s->topo);
}

int gw_cmd_serve(int argc, char **argv)
{
    static struct gw_server server; /* one per process; MHD threads point into it */
    struct gw_server *s = &server;
    memset(s, 0, sizeof(*s));
    int rc = parse_options(argc, argv, &s->opt);
    if (rc >= 0)
        return rc;
    /* Every thread started below inherits this mask, so only sigwait() sees the signals. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN); /* a file size limit makes write() fail with EFBIG instead */
    s->journal.fd = -1;
    rc = setup(s);
    if (rc == GW_EXIT_OK) {
        int sig = wait_for_signal(&set);
        struct gw_buf f;
        gw_buf_init(&f);
        gw_log_str(&f, "signal", sig == SIGINT ? "SIGINT" : "SIGTERM");
        gw_log_event("stopping", &f);
        drain(s);
        rc = GW_EXIT_OK;
    }
    teardown(s);
    if (rc == GW_EXIT_OK)
        gw_log_event("stopped", NULL);
    return rc;
}
