/* `shardgate serve`: its usage and options (docs/api.md); the server itself is http/. */
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "options.h"
#include "http.h"
#include "number.h"
#include "pg_conn.h"
#include "checkpointer.h"
#include "segment.h"
#include "scrub.h"
#include "server.h"
#include "ui_health.h"

const char gw_usage_serve[] =
    "usage: shardgate serve --conf FILE --shards FILE --state-dir DIR [--listen HOST:PORT]\n"
    "                       (--token-file FILE | --no-token) [--admin-token-file FILE]\n"
    "                       [--max-body BYTES] [--max-changes N]\n"
    "                       [--threads N] [--max-connections N] [--max-connections-per-ip N]\n"
    "                       [--timeout SECONDS] [--header-timeout SECONDS]\n"
    "                       [--max-body-inflight BYTES]\n"
    "                       [--body-timeout SECONDS] [--metrics-open]\n"
    "                       [--segment-bytes BYTES] [--checkpoint-interval DURATION]\n"
    "                       [--idempotency-window DURATION] [--max-watchers N]\n"
    "                       [--scrub-rate BYTES] [--feed-memory BYTES] [--health-url URL]\n"
    "       shardgate serve --conf FILE --shards FILE --store postgres://...\n"
    "                       [--read-store postgres://...] [options]\n"
    "Serves the HTTP API of docs/api.md; receipts are journaled in DIR/journal.jsonl, or with\n"
    "--store postgres://USER@HOST:PORT/DB in PostgreSQL, shared by every replica\n"
    "(docs/journal.md §10; create the schema with `shardgate db init`). --store file (the\n"
    "default) is the journal in DIR. SIGHUP re-reads --conf and --shards (ignored with\n"
    "--store postgres); PUT /v1/admin/membership needs --admin-token-file. Without\n"
    "--token-file every client that reaches --listen may POST and read: only with --no-token,\n"
    "warned at start (docs/api.md §11). --health-url http://HOST:PORT/: the health service\n"
    "the status page reads (URL healthz) and links (URL ui/). --read-store:\n"
    "the database the reads of batches, totals and the feed go to (a standby), not --store.\n"
    "defaults: --listen 127.0.0.1:8080 (port 0 picks a free port), --max-body 16777216,\n"
    "          --max-changes 100000, --threads 2, --max-connections 1024,\n"
    "          --max-connections-per-ip 256, --timeout 30, --header-timeout 10,\n"
    "          --max-body-inflight 268435456,\n"
    "          --body-timeout 60, --segment-bytes 67108864, --checkpoint-interval 10s,\n"
    "          --max-watchers 256, --scrub-rate 8388608 (bytes a second; 0: no scrub),\n"
    "          --feed-memory 67108864,\n"
    "          no --idempotency-window (ids kept for ever). DURATION: 90s, 12h, 30d, 500ms.\n"
    "          --conf defaults to $SHARDGATE_CONF; every option is also SHARDGATE_<OPTION>\n"
    "          in the environment (SHARDGATE_MAX_BODY=...), the command line winning.\n"
    "exit: 0 after SIGTERM/SIGINT and a drain, 3 contract/membership/journal/token unusable,\n"
    "      64 usage, 1 internal error (cannot listen, state dir unwritable).\n";

enum {
    OPT_CONF = 256,
    OPT_SHARDS,
    OPT_STATE,
    OPT_LISTEN,
    OPT_TOKEN,
    OPT_ADMIN_TOKEN,
    OPT_MAX_BODY,
    OPT_MAX_CHANGES,
    OPT_THREADS,
    OPT_MAX_CONN,
    OPT_MAX_PER_IP,
    OPT_TIMEOUT,
    OPT_HEADER_TIMEOUT,
    OPT_MAX_BODY_INFLIGHT,
    OPT_BODY_TIMEOUT,
    OPT_METRICS_OPEN,
    OPT_NO_TOKEN,
    OPT_SEGMENT_BYTES,
    OPT_CHECKPOINT_INTERVAL,
    OPT_IDEMPOTENCY_WINDOW,
    OPT_MAX_WATCHERS,
    OPT_STORE,
    OPT_READ_STORE,
    OPT_SCRUB_RATE,
    OPT_FEED_MEMORY,
    OPT_HEALTH_URL,
    OPT_HELP
};

/* The variable an option's value came from while the environment is read (docs/api.md, the
 * options), or NULL for the command line: what the messages name. */
static const char *from_variable;

/* "--NAME", or "SHARDGATE_NAME" for a value from the environment. */
static const char *option_name(const char *name, char *buf, size_t cap)
{
    snprintf(buf, cap, from_variable ? "%s" : "--%s", from_variable ? from_variable : name);
    return buf;
}

/* A bad --listen is a usage error found before anything is read or written; -1 when good. */
static int check_listen(const char *listen)
{
    struct sockaddr_storage addr;
    struct gw_error err;
    if (gw_http_parse_listen(listen, &addr, &err) == 0)
        return -1;
    fprintf(stderr, "shardgate: %s\n", err.msg);
    return GW_EXIT_USAGE;
}

static int usage_error(const char *what)
{
    fprintf(stderr, "shardgate: %s\n%s", what, gw_usage_serve);
    return GW_EXIT_USAGE;
}

/* A numeric option in min..max; returns 0 or prints why not. */
static int number_option(const char *name, const char *text, uint64_t min, uint64_t max,
                         uint64_t *out)
{
    char shown[64];
    if (gw_parse_u64(text, min, max, out) == 0)
        return 0;
    fprintf(stderr, "shardgate: %s must be an integer %llu..%llu, not \"%s\"\n",
            option_name(name, shown, sizeof(shown)), (unsigned long long)min,
            (unsigned long long)max, text);
    return -1;
}

/* The numeric options: name, range, and where the value goes (docs/limits.md). */
enum number_kind { KIND_U64, KIND_SIZE, KIND_UINT };
static const struct number_option_spec {
    int opt;
    const char *name;
    uint64_t min, max;
    enum number_kind kind;
    size_t offset;
} number_options[] = {
    {OPT_MAX_BODY, "max-body", 1, 1ULL << 32, KIND_U64,
     offsetof(struct gw_serve_options, max_body)},
    {OPT_MAX_BODY_INFLIGHT, "max-body-inflight", 1, 1ULL << 40, KIND_U64,
     offsetof(struct gw_serve_options, max_body_inflight)},
    {OPT_BODY_TIMEOUT, "body-timeout", 1, 3600, KIND_UINT,
     offsetof(struct gw_serve_options, body_timeout_s)},
    {OPT_MAX_CHANGES, "max-changes", 1, 10000000, KIND_SIZE,
     offsetof(struct gw_serve_options, max_changes)},
    {OPT_THREADS, "threads", 1, 256, KIND_UINT, offsetof(struct gw_serve_options, threads)},
    {OPT_MAX_CONN, "max-connections", 1, 100000, KIND_UINT,
     offsetof(struct gw_serve_options, max_connections)},
    {OPT_MAX_PER_IP, "max-connections-per-ip", 1, 100000, KIND_UINT,
     offsetof(struct gw_serve_options, max_per_ip)},
    {OPT_TIMEOUT, "timeout", 1, 3600, KIND_UINT, offsetof(struct gw_serve_options, timeout_s)},
    {OPT_HEADER_TIMEOUT, "header-timeout", 1, 3600, KIND_UINT,
     offsetof(struct gw_serve_options, header_timeout_s)},
    {OPT_SEGMENT_BYTES, "segment-bytes", GW_SEGMENT_BYTES_MIN, GW_SEGMENT_BYTES_MAX, KIND_U64,
     offsetof(struct gw_serve_options, segment_bytes)},
    {OPT_MAX_WATCHERS, "max-watchers", 1, 100000, KIND_UINT,
     offsetof(struct gw_serve_options, max_watchers)},
    {OPT_SCRUB_RATE, "scrub-rate", 0, 1ULL << 40, KIND_U64,
     offsetof(struct gw_serve_options, scrub_rate)},
    {OPT_FEED_MEMORY, "feed-memory", 1ULL << 20, 1ULL << 40, KIND_SIZE,
     offsetof(struct gw_serve_options, feed_memory)},
};

/* --checkpoint-interval (100ms..1d) and --idempotency-window (1s..100 years). */
static int set_duration(struct gw_serve_options *o, int c, const char *arg)
{
    int interval = c == OPT_CHECKPOINT_INTERVAL;
    uint64_t min = interval ? 100 : 1000, max = interval ? 86400000ull : 3153600000000ull;
    uint64_t *field = interval ? &o->checkpoint_interval_ms : &o->idempotency_window_ms;
    char shown[64];
    if (gw_parse_duration_ms(arg, min, max, field) == 0)
        return 0;
    fprintf(
        stderr, "shardgate: %s must be a duration %s..%s (e.g. 90s, 12h, 30d), not \"%s\"\n",
        option_name(interval ? "checkpoint-interval" : "idempotency-window", shown, sizeof(shown)),
        interval ? "100ms" : "1s", interval ? "1d" : "36500d", arg);
    return -1;
}

static int set_number(struct gw_serve_options *o, int c, const char *arg)
{
    for (size_t i = 0; i < sizeof(number_options) / sizeof(number_options[0]); i++) {
        const struct number_option_spec *n = &number_options[i];
        uint64_t v;
        if (n->opt != c)
            continue;
        if (number_option(n->name, arg, n->min, n->max, &v))
            return -1;
        char *field = (char *)o + n->offset;
        if (n->kind == KIND_U64)
            *(uint64_t *)field = v;
        else if (n->kind == KIND_SIZE)
            *(size_t *)field = (size_t)v;
        else
            *(unsigned *)field = (unsigned)v;
        return 0;
    }
    return -1;
}

static const struct option serve_options[] = {
    {"conf", required_argument, 0, OPT_CONF},
    {"shards", required_argument, 0, OPT_SHARDS},
    {"state-dir", required_argument, 0, OPT_STATE},
    {"listen", required_argument, 0, OPT_LISTEN},
    {"token-file", required_argument, 0, OPT_TOKEN},
    {"admin-token-file", required_argument, 0, OPT_ADMIN_TOKEN},
    {"max-body", required_argument, 0, OPT_MAX_BODY},
    {"max-changes", required_argument, 0, OPT_MAX_CHANGES},
    {"threads", required_argument, 0, OPT_THREADS},
    {"max-connections", required_argument, 0, OPT_MAX_CONN},
    {"max-connections-per-ip", required_argument, 0, OPT_MAX_PER_IP},
    {"timeout", required_argument, 0, OPT_TIMEOUT},
    {"header-timeout", required_argument, 0, OPT_HEADER_TIMEOUT},
    {"max-body-inflight", required_argument, 0, OPT_MAX_BODY_INFLIGHT},
    {"body-timeout", required_argument, 0, OPT_BODY_TIMEOUT},
    {"metrics-open", no_argument, 0, OPT_METRICS_OPEN},
    {"no-token", no_argument, 0, OPT_NO_TOKEN},
    {"segment-bytes", required_argument, 0, OPT_SEGMENT_BYTES},
    {"checkpoint-interval", required_argument, 0, OPT_CHECKPOINT_INTERVAL},
    {"idempotency-window", required_argument, 0, OPT_IDEMPOTENCY_WINDOW},
    {"max-watchers", required_argument, 0, OPT_MAX_WATCHERS},
    {"store", required_argument, 0, OPT_STORE},
    {"read-store", required_argument, 0, OPT_READ_STORE},
    {"scrub-rate", required_argument, 0, OPT_SCRUB_RATE},
    {"feed-memory", required_argument, 0, OPT_FEED_MEMORY},
    {"health-url", required_argument, 0, OPT_HEALTH_URL},
    {"help", no_argument, 0, OPT_HELP},
    {0, 0, 0, 0}};

/* --store file needs --state-dir; --store postgres:// keeps nothing on disk (docs/journal.md
 * §10), so the file store's options would be ignored: refused instead. */
static int check_store(struct gw_serve_options *o)
{
    if (o->store && strcmp(o->store, "file") == 0)
        o->store = NULL;
    if (o->store && !gw_pg_is_url(o->store))
        return usage_error("--store must be file or a postgres:// URL");
    if (!o->store && !o->state_dir)
        return usage_error("--state-dir DIR is required");
    if (o->read_store && (!o->store || !gw_pg_is_url(o->read_store)))
        return usage_error("--read-store takes a postgres:// URL, with --store postgres://");
    if (o->store && (o->state_dir || o->idempotency_window_ms || o->scrub_rate != UINT64_MAX))
        return usage_error(
            "--state-dir, --idempotency-window and --scrub-rate are for --store file only");
    if (o->scrub_rate == UINT64_MAX)
        o->scrub_rate = GW_SCRUB_RATE_DEFAULT;
    return check_listen(o->listen);
}

/* No client token is a choice said out loud: --no-token, else refused; a token file wins over
 * --no-token (docs/api.md §11). */
static int check_token(const struct gw_serve_options *o)
{
    if (!o->token_file && !o->no_token)
        return usage_error("--token-file FILE is required, or --no-token to serve every client "
                           "that reaches --listen without one");
    return -1;
}

/* --health-url is a base URL the page's policy can name (docs/api.md §19). */
static int check_health_url(const struct gw_serve_options *o)
{
    char msg[400];
    if (o->health_url && gw_ui_health_url_check(o->health_url, msg, sizeof(msg)) != 0)
        return usage_error(msg);
    return -1;
}

/* One pass of getopt over argv into o; returns -1 to go on, else the exit code. */
static int parse_pass(int argc, char **argv, struct gw_serve_options *o)
{
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+", serve_options, NULL)) != -1) {
        const char **slot = c == OPT_CONF          ? &o->conf
                            : c == OPT_SHARDS      ? &o->shards
                            : c == OPT_STATE       ? &o->state_dir
                            : c == OPT_LISTEN      ? &o->listen
                            : c == OPT_TOKEN       ? &o->token_file
                            : c == OPT_ADMIN_TOKEN ? &o->admin_token_file
                            : c == OPT_STORE       ? &o->store
                            : c == OPT_READ_STORE  ? &o->read_store
                            : c == OPT_HEALTH_URL  ? &o->health_url
                                                   : NULL;
        if (c == OPT_HELP) {
            fputs(gw_usage_serve, stdout);
            return GW_EXIT_OK;
        }
        if (c == '?') {
            char msg[200];
            gw_cli_bad_option(serve_options, argv, msg, sizeof(msg));
            return usage_error(msg);
        }
        if (c == OPT_METRICS_OPEN)
            o->metrics_open = 1;
        else if (c == OPT_NO_TOKEN)
            o->no_token = 1;
        else if (c == OPT_CHECKPOINT_INTERVAL || c == OPT_IDEMPOTENCY_WINDOW) {
            if (set_duration(o, c, optarg) != 0)
                return GW_EXIT_USAGE;
        } else if (slot)
            *slot = optarg;
        else if (set_number(o, c, optarg) != 0)
            return GW_EXIT_USAGE;
    }
    if (optind < argc) {
        char msg[120];
        gw_cli_unexpected(argv[optind], msg, sizeof(msg));
        return usage_error(msg);
    }
    return -1;
}

/* SHARDGATE_<NAME> for --<name>: upper case, '-' as '_'. */
static void variable_of(const char *name, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "SHARDGATE_");
    for (; *name && n + 1 < cap; name++)
        out[n++] = *name == '-' ? '_' : (char)(*name >= 'a' && *name <= 'z' ? *name - 32 : *name);
    out[n] = '\0';
}

/* Every option set in the environment (an empty value is unset), one pass each, before the
 * command line, whose options win (docs/api.md, the options). --metrics-open takes 1, true, 0
 * or false. Returns -1 to go on, else the exit code. */
static int parse_environment(struct gw_serve_options *o)
{
    int rc = -1;
    for (const struct option *opt = serve_options; opt->name && rc < 0; opt++) {
        char variable[64], flag[64];
        variable_of(opt->name, variable, sizeof(variable));
        const char *value = opt->val == OPT_HELP ? NULL : getenv(variable);
        if (!value || !value[0])
            continue;
        snprintf(flag, sizeof(flag), "--%s", opt->name);
        from_variable = variable;
        if (opt->has_arg == no_argument) {
            int on = strcmp(value, "1") == 0 || strcmp(value, "true") == 0;
            if (!on && strcmp(value, "0") != 0 && strcmp(value, "false") != 0) {
                fprintf(stderr, "shardgate: %s must be 1, true, 0 or false, not \"%s\"\n", variable,
                        value);
                rc = GW_EXIT_USAGE;
            } else if (on) {
                char *args[] = {"serve", flag, NULL};
                rc = parse_pass(2, args, o);
            }
        } else {
            char *args[] = {"serve", flag, (char *)value, NULL};
            rc = parse_pass(3, args, o);
        }
        from_variable = NULL;
    }
    return rc;
}

/* Returns -1 to go on, else the exit code. */
static int parse_options(int argc, char **argv, struct gw_serve_options *o)
{
    *o = (struct gw_serve_options){.listen = "127.0.0.1:8080",
                                   .max_body = GW_MAX_BODY_DEFAULT,
                                   .max_changes = GW_MAX_CHANGES_DEFAULT,
                                   .threads = 2,
                                   .max_connections = GW_MAX_CONNECTIONS_DEFAULT,
                                   .max_per_ip = GW_MAX_PER_IP_DEFAULT,
                                   .timeout_s = GW_TIMEOUT_DEFAULT,
                                   .header_timeout_s = GW_HEADER_TIMEOUT_DEFAULT,
                                   .max_body_inflight = GW_MAX_BODY_INFLIGHT_DEFAULT,
                                   .body_timeout_s = GW_BODY_TIMEOUT_DEFAULT,
                                   .segment_bytes = GW_SEGMENT_BYTES_DEFAULT,
                                   .checkpoint_interval_ms = GW_CHECKPOINT_INTERVAL_DEFAULT_MS,
                                   .max_watchers = GW_MAX_WATCHERS_DEFAULT,
                                   .feed_memory = GW_FEED_MEMORY_DEFAULT,
                                   .scrub_rate = UINT64_MAX /* not given */};
    int rc = parse_environment(o);
    if (rc < 0)
        rc = parse_pass(argc, argv, o);
    if (rc >= 0)
        return rc;
    o->conf = gw_conf_path(o->conf);
    if (!o->shards)
        return usage_error("--shards FILE is required");
    rc = check_store(o);
    if (rc < 0)
        rc = check_health_url(o);
    return rc >= 0 ? rc : check_token(o);
}

int gw_cmd_serve(int argc, char **argv)
{
    struct gw_serve_options opt;
    int rc = parse_options(argc, argv, &opt);
    return rc >= 0 ? rc : gw_server_run(&opt);
}
