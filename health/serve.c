/* HTTP service (libmicrohttpd): /healthz verifies what is new in the journal or the store. */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "journal.h"
#include "metrics.h"
#include "heads.h"
#include "serve.h"
#include "store.h"

struct hc_server {
    struct MHD_Daemon *daemon;
    struct hc_heads heads;   /* the request-head deadline (heads.h) */
    pthread_mutex_t lock;    /* one /healthz verifies at a time; /livez never waits for it */
    struct hc_report report; /* cumulative over the journal lines read so far */
    struct hc_verifier verifier;
    struct hc_journal journal;
    struct hc_store store; /* with --store: read into journal */
    int use_store;
    const char *allow_origin; /* --allow-origin, or NULL: no CORS */
    const char *names[HC_SLOTS_MAX];
    size_t n_names;
    /* under lock: the last error, kept until a full re-read succeeds (docs/operations.md) */
    char error[600];
    /* under lock: the contract + shards files, followed (docs/operations.md §1.4) */
    struct hc_files files;
    struct hc_epoch *own;  /* what the files held when last read whole */
    char files_error[600]; /* "": own is the files' current version */
    time_t last_full;      /* wall clock when the last full verification finished; 0: none yet */
    /* the unterminated tail: where it starts and since when (monotonic s) it has stayed */
    off_t tail_at;
    double tail_since;
    int tail_seen;
    unsigned reverify_s;
    /* the re-verification thread */
    pthread_t reverifier;
    int reverifier_started, stopping;
    pthread_cond_t wake;
};

static double hc_mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Under lock: re-reads the contract + shards files when either is not the version last read
 * (inode, size, mtime), and from then on judges with what they hold. While they cannot be
 * read whole, files_error fails every verdict: nothing is judged by a stale view. */
static void hc_server_follow_files(struct hc_server *s)
{
    if (!hc_files_changed(&s->files)) {
        s->files_error[0] = '\0';
        return;
    }
    struct hc_epoch *next = calloc(1, sizeof *next);
    struct hc_err err;
    int rc =
        next ? hc_files_load(&s->files, next, &err) : hc_err_set(&err, -ENOMEM, "out of memory");
    if (rc != 0) {
        free(next);
        snprintf(s->files_error, sizeof s->files_error, "input: %s", err.msg);
        return;
    }
    s->files_error[0] = '\0';
    hc_journal_set_own(&s->journal, next);
    hc_epoch_free(s->own);
    free(s->own);
    s->own = next;
}

/* Under lock, --store: the whole database again when it moved, after an error or when asked
 * (hc_journal_reread); an error is kept until such a read succeeds (docs/operations.md §1.7). */
static void hc_server_update_store(struct hc_server *s)
{
    struct hc_err err;
    int rc = s->journal.reread ? 1 : hc_store_moved(&s->store, &err);
    if (rc == 0)
        return; /* nothing moved: the verdict stands */
    if (rc == 1)
        rc = hc_store_verify(&s->store, &err);
    if (rc != 0) {
        snprintf(s->error, sizeof s->error, "input: store: %s", err.msg);
        return;
    }
    s->error[0] = '\0';
    s->last_full = time(NULL);
}

/* Under lock: verifies what is new (everything, after an error or a hc_journal_reread), keeps
 * an error until a full read succeeds, and follows the unterminated tail. */
static void hc_server_update(struct hc_server *s)
{
    struct hc_err err;
    struct hc_journal *j = &s->journal;
    hc_server_follow_files(s);
    if (s->use_store) {
        hc_server_update_store(s);
        return;
    }
    unsigned resets = j->resets;
    int full = j->offset == 0 || j->reread;
    int rc = hc_journal_update(j, &err);
    full = full || j->resets != resets;
    if (rc != 0) {
        snprintf(s->error, sizeof s->error, "input: journal: %s", err.msg);
        return;
    }
    if (full) {
        s->error[0] = '\0';
        s->last_full = time(NULL);
    }
    if (j->pending == 0) {
        s->tail_seen = 0;
    } else if (!s->tail_seen || s->tail_at != j->offset) {
        s->tail_seen = 1;
        s->tail_at = j->offset;
        s->tail_since = hc_mono_now();
    }
}

/* Re-verifies the whole journal every reverify_s seconds, so an edit of a line verified
 * before is found within that interval (docs/operations.md, "serve"). */
static void *hc_reverify_loop(void *arg)
{
    struct hc_server *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!s->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += (time_t)s->reverify_s;
        while (!s->stopping && pthread_cond_timedwait(&s->wake, &s->lock, &until) == 0)
            ;
        if (s->stopping)
            break;
        hc_journal_reread(&s->journal);
        hc_server_update(s);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* Under lock: the top-level fields /healthz adds to the health+json body. */
static json_t *hc_server_fields(const struct hc_server *s)
{
    json_t *f = json_object();
    if (f == NULL)
        return NULL;
    char when[32] = "";
    struct tm tm;
    if (s->last_full != 0 && gmtime_r(&s->last_full, &tm) != NULL)
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_object_set_new(f, "last_full_verification", when[0] ? json_string(when) : json_null());
    json_object_set_new(f, "reverify_interval_s", json_integer((json_int_t)s->reverify_s));
    json_object_set_new(f, "pending_tail_bytes", json_integer((json_int_t)s->journal.pending));
    json_object_set_new(f, "files_epoch",
                        s->files_error[0] ? json_null() : json_string(s->own->epoch_id));
    return f;
}

/* Splits "HOST:PORT" or "[HOST]:PORT" into host and port text. */
static int split_listen(const char *text, char host[64], const char **port, struct hc_err *err)
{
    const char *colon = strrchr(text, ':');
    const char *start = text, *end = colon;
    if (text[0] == '[') {
        end = strchr(text, ']');
        if (end == NULL || end[1] != ':')
            return hc_err_set(err, -EINVAL, "--listen %s: expected [IPv6]:PORT", text);
        start = text + 1;
        colon = end + 1;
    }
    if (colon == NULL || end == start || (size_t)(end - start) >= 64)
        return hc_err_set(err, -EINVAL, "--listen %s: expected IPv4:PORT or [IPv6]:PORT", text);
    memcpy(host, start, (size_t)(end - start));
    host[end - start] = '\0';
    *port = colon + 1;
    return 0;
}

/* The listening socket, bound here rather than by libmicrohttpd, so that a port in use is
 * said once, in this program's words; -errno on failure. */
static int listen_on(const struct sockaddr_storage *addr)
{
    int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), on = 1;
    if (fd < 0)
        return -errno;
    socklen_t len =
        addr->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
        (addr->ss_family == AF_INET6 &&
         setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on)) != 0) ||
        bind(fd, (const struct sockaddr *)addr, len) != 0 || listen(fd, SOMAXCONN) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

int hc_parse_listen(const char *text, struct sockaddr_storage *out, struct hc_err *err)
{
    char host[64];
    const char *p = NULL;
    int rc = split_listen(text, host, &p, err);
    if (rc != 0)
        return rc;
    if (*p == '\0' || strspn(p, "0123456789") != strlen(p) || strlen(p) > 5 || atoi(p) > 65535)
        return hc_err_set(err, -EINVAL, "--listen %s: port must be 0..65535", text);
    uint16_t port = htons((uint16_t)atoi(p));
    memset(out, 0, sizeof *out);
    struct sockaddr_in *v4 = (struct sockaddr_in *)out;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;
    if (text[0] != '[' && inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = port;
        return 0;
    }
    if (text[0] == '[' && inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = port;
        return 0;
    }
    return hc_err_set(err, -EINVAL, "--listen %s: %s is not an %s address", text, host,
                      text[0] == '[' ? "IPv6" : "IPv4");
}

/* The length of the HOST at p: a name of letters, digits, '.' and '-', or "[IPv6]"; 0: none. */
static size_t hc_origin_host(const char *p)
{
    if (p[0] != '[')
        return strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-");
    size_t n = strspn(p + 1, "0123456789abcdefABCDEF:.");
    return n > 0 && p[1 + n] == ']' ? n + 2 : 0;
}

/* "http://HOST[:PORT]" or "https://HOST[:PORT]", a port of 1..5 digits, nothing after. */
int hc_is_origin(const char *text)
{
    const char *p = strncmp(text, "http://", 7) == 0    ? text + 7
                    : strncmp(text, "https://", 8) == 0 ? text + 8
                                                        : NULL;
    if (p == NULL || strlen(text) > 200)
        return 0;
    size_t host = hc_origin_host(p);
    if (host == 0)
        return 0;
    p += host;
    if (*p == ':') {
        size_t digits = strspn(p + 1, "0123456789");
        if (digits == 0 || digits > 5)
            return 0;
        p += 1 + digits;
    }
    return *p == '\0';
}

/* Queues body (freed with the response; NULL: out of memory, a 503 fail) with its type. With
 * allow_origin (--allow-origin, docs/operations.md §1.4) that origin, and only it, may read the
 * answer; caches keep answers apart by Origin. */
static enum MHD_Result hc_queue(struct MHD_Connection *conn, unsigned status, char *body,
                                const char *type, const char *allow_origin)
{
    if (body == NULL) {
        static const char oom[] = "{\"status\":\"fail\",\"issues\":[\"health: out of memory\"]}";
        struct MHD_Response *r =
            MHD_create_response_from_buffer(sizeof oom - 1, (void *)oom, MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(r, "Content-Type", "application/health+json");
        enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_SERVICE_UNAVAILABLE, r);
        MHD_destroy_response(r);
        return ret;
    }
    size_t n = strlen(body);
    struct MHD_Response *r = MHD_create_response_from_buffer(n, body, MHD_RESPMEM_MUST_FREE);
    if (r == NULL) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    if (allow_origin != NULL) {
        const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
        MHD_add_response_header(r, "Vary", "Origin");
        if (origin != NULL && strcmp(origin, allow_origin) == 0)
            MHD_add_response_header(r, "Access-Control-Allow-Origin", allow_origin);
    }
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result hc_reply(struct MHD_Connection *conn, unsigned status, char *body,
                                const char *type)
{
    return hc_queue(conn, status, body, type, NULL);
}

static char *hc_dup(const char *s)
{
    char *d = malloc(strlen(s) + 1);
    if (d != NULL)
        strcpy(d, s);
    return d;
}

/* Verifies what was appended since the last call and renders the whole verdict into v. A
 * large journal's first request can take seconds; connections have their own threads, so
 * /livez still answers meanwhile. An error, or a tail unterminated for longer than the
 * re-verification interval, fails the verdict; an error (the files, the journal or the store
 * could not be read) is also a verdict not reached: "cannot judge", never "pass". */
static void hc_server_verdict(struct hc_server *s, struct hc_verdict *v)
{
    char torn[160];
    const char *extra_issue = NULL;
    pthread_mutex_lock(&s->lock);
    hc_server_update(s);
    v->judged = s->files_error[0] == '\0' && s->error[0] == '\0';
    if (s->files_error[0] != '\0') {
        extra_issue = s->files_error;
    } else if (s->error[0] != '\0') {
        extra_issue = s->error;
    } else if (s->tail_seen && hc_mono_now() - s->tail_since > (double)s->reverify_s) {
        snprintf(torn, sizeof torn,
                 "journal_line: line %ld: last line has no newline for more than %u s "
                 "(torn tail, %zu bytes)",
                 s->journal.line + 1, s->reverify_s, s->journal.pending);
        extra_issue = torn;
    }
    struct hc_report end;
    struct hc_journal_end state;
    hc_report_init(&end);
    hc_journal_end_state(&s->journal, &state);
    if (v->judged)
        hc_verify_end(&s->verifier, &end, &state);
    v->body = hc_report_health_json(&s->report, &end, s->names, s->n_names, extra_issue,
                                    hc_server_fields(s));
    v->pass = extra_issue == NULL && hc_report_pass(&s->report, &end);
    v->issues = s->report.issues_total + end.issues_total + (extra_issue != NULL);
    v->checks = s->report.checks + end.checks;
    v->receipts = s->report.receipts + end.receipts;
    v->placements = s->report.placements + end.placements;
    v->last_full = s->last_full;
    v->reverify_s = s->reverify_s;
    hc_report_free(&end);
    pthread_mutex_unlock(&s->lock);
}

static enum MHD_Result hc_healthz(struct hc_server *s, struct MHD_Connection *conn)
{
    struct hc_verdict v;
    hc_server_verdict(s, &v);
    return hc_queue(conn, v.pass ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, v.body,
                    "application/health+json", s->allow_origin);
}

/* GET /metrics: the same verdict as /healthz, for Prometheus (docs/operations.md §1.4). */
static enum MHD_Result hc_metrics(struct hc_server *s, struct MHD_Connection *conn)
{
    struct hc_verdict v;
    hc_server_verdict(s, &v);
    free(v.body);
    return hc_reply(conn, MHD_HTTP_OK, hc_metrics_text(&v),
                    "text/plain; version=0.0.4; charset=utf-8");
}

static enum MHD_Result hc_handle(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload,
                                 size_t *upload_size, void **con_cls)
{
    struct hc_server *s = cls;
    (void)version;
    (void)upload;
    if (*con_cls == NULL) { /* first call: headers only */
        *con_cls = s;
        hc_heads_began(&s->heads, conn);
        return MHD_YES;
    }
    if (*upload_size != 0) { /* ignore any body */
        *upload_size = 0;
        return MHD_YES;
    }
    int known = strcmp(url, "/healthz") == 0 || strcmp(url, "/livez") == 0 ||
                strcmp(url, "/metrics") == 0 || strcmp(url, "/ui") == 0 ||
                strncmp(url, "/ui/", 4) == 0;
    if (!known)
        return hc_reply(conn, MHD_HTTP_NOT_FOUND,
                        hc_dup("{\"error\":{\"code\":\"not_found\",\"message\":\"GET /healthz, "
                               "/livez, /metrics or /ui/\"}}\n"),
                        "application/json");
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        char *body = hc_dup("{\"error\":{\"code\":\"method_not_allowed\",\"message\":\"GET "
                            "only\"}}\n");
        struct MHD_Response *r =
            body ? MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE)
                 : NULL;
        if (r == NULL) {
            free(body);
            return MHD_NO;
        }
        MHD_add_response_header(r, "Allow", "GET, HEAD");
        MHD_add_response_header(r, "Content-Type", "application/json");
        enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_METHOD_NOT_ALLOWED, r);
        MHD_destroy_response(r);
        return ret;
    }
    if (strcmp(url, "/livez") == 0)
        return hc_reply(conn, MHD_HTTP_OK, hc_dup("{\"status\":\"pass\"}"),
                        "application/health+json");
    if (strcmp(url, "/metrics") == 0)
        return hc_metrics(s, conn);
    if (strncmp(url, "/ui", 3) == 0)
        return hc_ui_reply(conn, url + 3);
    return hc_healthz(s, conn);
}

static void hc_request_ended(void *cls, struct MHD_Connection *conn, void **con_cls,
                             enum MHD_RequestTerminationCode toe)
{
    (void)con_cls;
    (void)toe;
    hc_heads_ended(cls, conn);
}

int hc_serve_start(const struct hc_serve_config *cfg, struct hc_server **out, struct hc_err *err)
{
    struct sockaddr_storage addr;
    int rc = hc_parse_listen(cfg->listen, &addr, err);
    if (rc != 0)
        return rc;
    struct hc_server *s = calloc(1, sizeof *s);
    struct hc_epoch *own = malloc(sizeof *own);
    if (s == NULL || own == NULL) {
        free(s);
        free(own);
        return hc_err_set(err, -ENOMEM, "out of memory");
    }
    *own = *cfg->own; /* taken over: the caller's copy is left empty */
    memset(cfg->own, 0, sizeof *cfg->own);
    s->own = own;
    s->files = cfg->files;
    hc_report_init(&s->report);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    s->reverify_s = cfg->reverify_s ? cfg->reverify_s : 60;
    s->allow_origin = cfg->allow_origin;
    rc = hc_verifier_init(&s->verifier, &s->report, cfg->n_criteria, err);
    if (rc != 0) {
        pthread_cond_destroy(&s->wake);
        pthread_mutex_destroy(&s->lock);
        hc_epoch_free(s->own);
        free(s->own);
        free(s);
        return rc;
    }
    s->verifier.max_changes = cfg->max_changes ? cfg->max_changes : HC_MAX_CHANGES_DEFAULT;
    hc_journal_init(&s->journal, cfg->journal, &s->verifier, s->own);
    s->journal.opts = cfg->segments;
    s->use_store = cfg->store != NULL;
    hc_store_init(&s->store, cfg->store, &s->journal);
    s->n_names = hc_slot_names(s->names, HC_SLOTS_MAX);

    unsigned v6 = addr.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0;
    int fd = listen_on(&addr);
    if (fd < 0) {
        hc_serve_stop(s);
        return hc_err_set(err, fd, "cannot listen on %s: %s", cfg->listen, strerror(-fd));
    }
    rc = hc_heads_start(&s->heads);
    if (rc != 0) {
        close(fd);
        hc_serve_stop(s);
        return hc_err_set(err, rc, "cannot start the request-head deadline's thread");
    }
    s->daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG | v6, 0,
        NULL, NULL, hc_handle, s, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)(HC_HEADS_MAX + HC_HEADS_SPARE), MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)16,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)(64 * 1024), MHD_OPTION_NOTIFY_CONNECTION, hc_heads_notify, &s->heads,
        MHD_OPTION_NOTIFY_COMPLETED, hc_request_ended, &s->heads, MHD_OPTION_END);
    if (s->daemon == NULL) {
        close(fd);
        hc_serve_stop(s);
        return hc_err_set(err, -EIO, "cannot start the HTTP threads on %s", cfg->listen);
    }
    rc = pthread_create(&s->reverifier, NULL, hc_reverify_loop, s);
    if (rc != 0) {
        hc_serve_stop(s);
        return hc_err_set(err, -rc, "cannot start the re-verification thread: %s", strerror(rc));
    }
    s->reverifier_started = 1;
    *out = s;
    return 0;
}

void hc_serve_stop(struct hc_server *s)
{
    if (s == NULL)
        return;
    if (s->daemon != NULL)
        MHD_stop_daemon(s->daemon);
    hc_heads_stop(&s->heads); /* every connection closed */
    if (s->reverifier_started) {
        pthread_mutex_lock(&s->lock);
        s->stopping = 1;
        pthread_cond_signal(&s->wake);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->reverifier, NULL);
    }
    hc_store_free(&s->store);
    hc_journal_free(&s->journal);
    if (s->own != NULL)
        hc_epoch_free(s->own);
    free(s->own);
    hc_verifier_free(&s->verifier);
    hc_report_free(&s->report);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
