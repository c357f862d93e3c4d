/* HTTP service (libmicrohttpd): /healthz verifies journal lines appended since the last call. */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "journal.h"
#include "serve.h"

struct hc_server {
    struct MHD_Daemon *daemon;
    pthread_mutex_t lock;    /* one /healthz verifies at a time; /livez never waits for it */
    struct hc_report report; /* cumulative over the journal lines read so far */
    struct hc_verifier verifier;
    struct hc_journal journal;
    const char *names[HC_SLOTS_MAX];
    size_t n_names;
};

int hc_parse_listen(const char *text, char host[64], unsigned *port, struct hc_err *err)
{
    const char *colon = strrchr(text, ':');
    if (colon == NULL || colon == text || (size_t)(colon - text) >= 64)
        return hc_err_set(err, -EINVAL, "--listen %s: expected IPv4:PORT", text);
    memcpy(host, text, (size_t)(colon - text));
    host[colon - text] = '\0';
    struct in_addr a;
    if (inet_pton(AF_INET, host, &a) != 1)
        return hc_err_set(err, -EINVAL, "--listen %s: %s is not an IPv4 address", text, host);
    const char *p = colon + 1;
    if (*p == '\0' || strspn(p, "0123456789") != strlen(p) || strlen(p) > 5 || atoi(p) > 65535)
        return hc_err_set(err, -EINVAL, "--listen %s: port must be 0..65535", text);
    *port = (unsigned)atoi(p);
    return 0;
}

static enum MHD_Result hc_reply(struct MHD_Connection *conn, unsigned status, char *body,
                                const char *type)
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
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static char *hc_dup(const char *s)
{
    char *d = malloc(strlen(s) + 1);
    if (d != NULL)
        strcpy(d, s);
    return d;
}

/* Verifies what was appended since the last call and renders the whole verdict. A large
 * journal's first request can take seconds; connections have their own threads, so /livez
 * still answers meanwhile. */
static enum MHD_Result hc_healthz(struct hc_server *s, struct MHD_Connection *conn)
{
    struct hc_err err;
    char extra[600];
    const char *extra_issue = NULL;
    pthread_mutex_lock(&s->lock);
    int rc = hc_journal_update(&s->journal, 0, &err);
    if (rc != 0) {
        snprintf(extra, sizeof extra, "input: journal: %s", err.msg);
        extra_issue = extra;
    }
    struct hc_report end;
    struct hc_journal_end state;
    hc_report_init(&end);
    hc_journal_end_state(&s->journal, &state);
    if (rc == 0)
        hc_verify_end(&s->verifier, &end, &state);
    char *body = hc_report_health_json(&s->report, &end, s->names, s->n_names, extra_issue);
    int pass = rc == 0 && hc_report_pass(&s->report, &end);
    hc_report_free(&end);
    pthread_mutex_unlock(&s->lock);
    return hc_reply(conn, pass ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, body,
                    "application/health+json");
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
        return MHD_YES;
    }
    if (*upload_size != 0) { /* ignore any body */
        *upload_size = 0;
        return MHD_YES;
    }
    int known = strcmp(url, "/healthz") == 0 || strcmp(url, "/livez") == 0;
    if (!known)
        return hc_reply(conn, MHD_HTTP_NOT_FOUND,
                        hc_dup("{\"error\":{\"code\":\"not_found\",\"message\":\"GET /healthz "
                               "or /livez\"}}\n"),
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
    return hc_healthz(s, conn);
}

int hc_serve_start(const struct hc_serve_config *cfg, struct hc_server **out, struct hc_err *err)
{
    char host[64];
    unsigned port;
    int rc = hc_parse_listen(cfg->listen, host, &port, err);
    if (rc != 0)
        return rc;
    struct hc_server *s = calloc(1, sizeof *s);
    if (s == NULL)
        return hc_err_set(err, -ENOMEM, "out of memory");
    hc_report_init(&s->report);
    pthread_mutex_init(&s->lock, NULL);
    rc = hc_verifier_init(&s->verifier, &s->report, cfg->n_criteria, err);
    if (rc != 0) {
        pthread_mutex_destroy(&s->lock);
        free(s);
        return rc;
    }
    hc_journal_init(&s->journal, cfg->journal, &s->verifier, cfg->own);
    s->n_names = hc_slot_names(s->names, HC_SLOTS_MAX);

    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, host, &addr.sin_addr);
    s->daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG,
        (uint16_t)port, NULL, NULL, hc_handle, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)16,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)(64 * 1024), MHD_OPTION_END);
    if (s->daemon == NULL) {
        int e = errno ? errno : EADDRINUSE;
        hc_serve_stop(s);
        return hc_err_set(err, -e, "cannot listen on %s: %s", cfg->listen, strerror(e));
    }
    *out = s;
    return 0;
}

void hc_serve_stop(struct hc_server *s)
{
    if (s == NULL)
        return;
    if (s->daemon != NULL)
        MHD_stop_daemon(s->daemon);
    hc_journal_free(&s->journal);
    hc_verifier_free(&s->verifier);
    hc_report_free(&s->report);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
