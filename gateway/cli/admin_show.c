/* `shardgate admin status` and `epochs`: what a running server says of itself, as a table for
 * people or the server's own JSON for scripts (docs/tools.md §1.2). */
#define _GNU_SOURCE /* memmem */
#include "admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char *gw_admin_str(json_t *obj, const char *key, const char *dflt)
{
    const char *v = json_string_value(json_object_get(obj, key));
    return v ? v : dflt;
}

static long long num(json_t *obj, const char *key)
{
    return json_integer_value(json_object_get(obj, key));
}

int gw_admin_print(const char *data, size_t len)
{
    int bad = fwrite(data, 1, len, stdout) != len;
    if (!len || data[len - 1] != '\n')
        bad |= fputc('\n', stdout) == EOF;
    bad |= fflush(stdout) != 0;
    if (bad)
        fprintf(stderr, "shardgate: admin: cannot write to stdout\n");
    return bad ? GW_EXIT_INTERNAL : GW_EXIT_OK;
}

/* The error of a refused request: "HTTP 412 epoch_mismatch: <message>". */
static void say_refused(const char *cmd, const char *method, const char *path,
                        const struct gw_admin_answer *a)
{
    json_t *doc = json_loadb(a->body.data ? a->body.data : "", a->body.len, 0, NULL);
    json_t *err = json_object_get(doc, "error");
    const char *code = json_string_value(json_object_get(err, "code"));
    const char *message = json_string_value(json_object_get(err, "message"));
    const char *hint = "";
    char said[1200];
    snprintf(said, sizeof(said), "%s", message ? message : "(no message)");
    char *force = strstr(said, "(add force=1 ");
    if (force && strcmp(cmd, "apply") == 0) /* the server's hint, as this command takes it */
        snprintf(force, sizeof(said) - (size_t)(force - said), "(add --force to apply it anyway)");
    if (a->status == 401)
        hint = strcmp(cmd, "plan") == 0 || strcmp(cmd, "apply") == 0
                   ? " (the admin token comes from --admin-token-file FILE, else "
                     "$SHARDGATE_ADMIN_TOKEN)"
                   : " (the token comes from --token-file FILE, else $SHARDGATE_TOKEN)";
    fprintf(stderr, "shardgate: admin %s: %s %s: HTTP %ld %s: %s%s\n", cmd, method, path, a->status,
            code ? code : "error", said, hint);
    json_decref(doc);
}

int gw_admin_call(struct gw_admin_client *c, const char *cmd, const char *method, const char *path,
                  const char *token, const char *if_match, const struct gw_buf *body,
                  struct gw_admin_answer *a)
{
    char msg[2400];
    if (gw_admin_request(c, method, path, token, if_match, body, a, msg, sizeof(msg)) != 0) {
        fprintf(stderr, "shardgate: admin %s: %s\n", cmd, msg);
        return GW_EXIT_UNUSABLE;
    }
    if (a->status >= 200 && a->status < 300)
        return GW_EXIT_OK;
    say_refused(cmd, method, path, a);
    return GW_EXIT_NOT_OK;
}

/* Quotes the digits after each "load_total": and "received_total": (exact big integers, docs/
 * api.md §7), which a JSON reader with 64-bit integers cannot hold. */
static void quote_totals(const char *p, size_t len, struct gw_buf *out)
{
    static const char *keys[] = {"\"load_total\":", "\"received_total\":"};
    size_t at = 0;
    while (at < len) {
        size_t next = len, klen = 0;
        for (size_t k = 0; k < 2; k++) {
            const char *hit = memmem(p + at, len - at, keys[k], strlen(keys[k]));
            if (hit && (size_t)(hit - p) < next) {
                next = (size_t)(hit - p);
                klen = strlen(keys[k]);
            }
        }
        if (next == len) {
            gw_buf_append(out, p + at, len - at);
            return;
        }
        size_t digits = next + klen;
        while (digits < len && p[digits] >= '0' && p[digits] <= '9')
            digits++;
        gw_buf_append(out, p + at, next + klen - at);
        gw_buf_puts(out, "\"");
        gw_buf_append(out, p + next + klen, digits - next - klen);
        gw_buf_puts(out, "\"");
        at = digits;
    }
}

json_t *gw_admin_json(const struct gw_admin_answer *a, const char *cmd)
{
    struct gw_buf q;
    json_error_t e;
    gw_buf_init(&q);
    quote_totals(a->body.data ? a->body.data : "", a->body.len, &q);
    json_t *doc = q.failed ? NULL : json_loadb(q.data ? q.data : "", q.len, 0, &e);
    gw_buf_free(&q);
    if (!doc)
        fprintf(stderr, "shardgate: admin %s: the server's answer is not JSON\n", cmd);
    return doc;
}

/* Each shard's share of the ring from /metrics (shardgate_ring_share_ratio{shard="ID"} V). */
static double share_of(const struct gw_admin_answer *metrics, const char *id)
{
    char prefix[300];
    snprintf(prefix, sizeof(prefix), "shardgate_ring_share_ratio{shard=\"%s\"} ", id);
    const char *text = metrics->body.data ? metrics->body.data : "";
    const char *hit = memmem(text, metrics->body.len, prefix, strlen(prefix));
    return hit ? strtod(hit + strlen(prefix), NULL) : 0.0;
}

static int id_width(json_t *shards)
{
    size_t i, w = strlen("shard");
    json_t *s;
    json_array_foreach(shards, i, s)
    {
        size_t n = strlen(gw_admin_str(s, "id", ""));
        w = n > w ? n : w;
    }
    return (int)w;
}

static void print_shards(json_t *shards, const struct gw_admin_answer *metrics)
{
    int w = id_width(shards);
    size_t i;
    json_t *s;
    printf("%-*s  %-8s  %6s  %8s  %7s  %20s  %20s\n", w, "shard", "state", "weight", "capacity",
           "share", "load_total", "received_total");
    json_array_foreach(shards, i, s)
    {
        const char *id = gw_admin_str(s, "id", "");
        printf("%-*s  %-8s  %6lld  %8lld  %6.2f%%  %20s  %20s\n", w, id,
               gw_admin_str(s, "state", ""), num(s, "weight"), num(s, "capacity"),
               100 * share_of(metrics, id), gw_admin_str(s, "load_total", ""),
               gw_admin_str(s, "received_total", ""));
    }
}

/* "yes" or "no", then each check: "journal ok, ring ok". */
static void print_ready(json_t *readyz, long status)
{
    const char *key;
    json_t *v;
    int first = 1;
    printf("ready   %s (", status == 200 ? "yes" : "no");
    json_object_foreach(json_object_get(readyz, "checks"), key, v)
    {
        printf("%s%s %s", first ? "" : ", ", key,
               json_string_value(v) ? json_string_value(v) : "?");
        first = 0;
    }
    printf(")\n");
}

static void print_status(json_t *ring, json_t *epoch, json_t *readyz, long ready_status,
                         json_t *shards, const struct gw_admin_answer *metrics)
{
    printf("epoch   %s (epoch_seq %lld, %s, %s)\n", gw_admin_str(ring, "epoch", "?"),
           num(epoch, "epoch_seq"), gw_admin_str(epoch, "source", "?"),
           gw_admin_str(epoch, "time", "no time recorded"));
    printf("ring    %s (%s, %s, %lld vnodes, %zu online)\n", gw_admin_str(ring, "id", "?"),
           gw_admin_str(ring, "algorithm", "?"), gw_admin_str(ring, "hash", "?"),
           num(ring, "vnodes"), json_array_size(json_object_get(ring, "online")));
    print_ready(readyz, ready_status);
    print_shards(json_object_get(shards, "shards"), metrics);
    fflush(stdout);
}

/* The raw value of a document's only member ({"shards":[...]} -> [...]). */
static void inner(const struct gw_admin_answer *a, const char **p, size_t *n)
{
    const char *d = a->body.data ? a->body.data : "";
    const char *open = memchr(d, ':', a->body.len), *close = d + a->body.len;
    while (close > d && close[-1] != '}')
        close--;
    *p = open ? open + 1 : d;
    *n = open && close > *p ? (size_t)(close - 1 - *p) : 0;
}

/* {"ring":R,"epoch":E,"ready":B,"readyz":Z,"shards":S,"ring_share":{...}}: the server's JSON. */
static int print_status_json(const struct gw_admin_answer *ring, json_t *epoch,
                             const struct gw_admin_answer *readyz, json_t *shards,
                             const struct gw_admin_answer *shards_raw,
                             const struct gw_admin_answer *metrics)
{
    struct gw_buf b;
    const char *p;
    size_t n, i;
    json_t *s;
    char *e = json_dumps(epoch, JSON_COMPACT | JSON_PRESERVE_ORDER);
    gw_buf_init(&b);
    gw_buf_puts(&b, "{\"ring\":");
    gw_buf_append(&b, ring->body.data, ring->body.len - (ring->body.len > 0));
    gw_buf_puts(&b, ",\"epoch\":");
    gw_buf_puts(&b, e ? e : "null");
    gw_buf_puts(&b, readyz->status == 200 ? ",\"ready\":true,\"readyz\":"
                                          : ",\"ready\":false,"
                                            "\"readyz\":");
    gw_buf_append(&b, readyz->body.data, readyz->body.len - (readyz->body.len > 0));
    inner(shards_raw, &p, &n);
    gw_buf_puts(&b, ",\"shards\":");
    gw_buf_append(&b, p, n);
    gw_buf_puts(&b, ",\"ring_share\":{");
    json_array_foreach(json_object_get(shards, "shards"), i, s)
    {
        char share[400];
        const char *id = gw_admin_str(s, "id", "");
        snprintf(share, sizeof(share), "%s\"%s\":%.6f", i ? "," : "", id, share_of(metrics, id));
        gw_buf_puts(&b, share);
    }
    gw_buf_puts(&b, "}}");
    free(e);
    int rc = b.failed ? GW_EXIT_INTERNAL : gw_admin_print(b.data, b.len);
    gw_buf_free(&b);
    return rc;
}

/* The last epoch of the chain, a new reference; NULL when it cannot be read. */
static json_t *current_epoch(struct gw_admin_client *c, int *rc)
{
    struct gw_admin_answer a;
    json_t *doc = NULL, *last = NULL;
    *rc = gw_admin_call(c, "status", "GET", "/v1/epochs", c->token, NULL, NULL, &a);
    if (*rc == GW_EXIT_OK && !(doc = gw_admin_json(&a, "status")))
        *rc = GW_EXIT_NOT_OK;
    json_t *chain = json_object_get(doc, "epochs");
    if (doc && json_array_size(chain))
        last = json_incref(json_array_get(chain, json_array_size(chain) - 1));
    json_decref(doc);
    gw_admin_answer_free(&a);
    return last;
}

/* The server's answers status shows; the first one that fails ends the reading. */
struct status_answers {
    struct gw_admin_answer ring, shards, readyz, metrics;
};

static int read_status(struct gw_admin_client *c, struct status_answers *s)
{
    char msg[2400];
    int rc = gw_admin_call(c, "status", "GET", "/v1/ring", c->token, NULL, NULL, &s->ring);
    if (rc == GW_EXIT_OK)
        rc = gw_admin_call(c, "status", "GET", "/v1/shards", c->token, NULL, NULL, &s->shards);
    if (rc == GW_EXIT_OK)
        rc = gw_admin_call(c, "status", "GET", "/metrics", c->token, NULL, NULL, &s->metrics);
    if (rc == GW_EXIT_OK && /* 503 while not ready: an answer, not a failure */
        gw_admin_request(c, "GET", "/readyz", NULL, NULL, NULL, &s->readyz, msg, sizeof(msg))) {
        fprintf(stderr, "shardgate: admin status: %s\n", msg);
        rc = GW_EXIT_UNUSABLE;
    }
    return rc;
}

int gw_admin_status(struct gw_admin_client *c, const struct gw_admin_args *args)
{
    struct status_answers s;
    memset(&s, 0, sizeof(s));
    json_t *ring = NULL, *shards = NULL, *ready = NULL, *epoch = NULL;
    int rc = read_status(c, &s);
    if (rc == GW_EXIT_OK)
        epoch = current_epoch(c, &rc);
    if (rc == GW_EXIT_OK) {
        ring = gw_admin_json(&s.ring, "status");
        shards = gw_admin_json(&s.shards, "status");
        ready = gw_admin_json(&s.readyz, "status");
        rc = ring && shards && ready && epoch ? GW_EXIT_OK : GW_EXIT_NOT_OK;
    }
    if (rc == GW_EXIT_OK && args->json)
        rc = print_status_json(&s.ring, epoch, &s.readyz, shards, &s.shards, &s.metrics);
    else if (rc == GW_EXIT_OK)
        print_status(ring, epoch, ready, s.readyz.status, shards, &s.metrics);
    json_decref(epoch);
    json_decref(ring);
    json_decref(shards);
    json_decref(ready);
    gw_admin_answer_free(&s.ring);
    gw_admin_answer_free(&s.shards);
    gw_admin_answer_free(&s.readyz);
    gw_admin_answer_free(&s.metrics);
    return rc;
}

int gw_admin_epochs(struct gw_admin_client *c, const struct gw_admin_args *args)
{
    struct gw_admin_answer a;
    json_t *doc = NULL, *e;
    size_t i;
    int rc = gw_admin_call(c, "epochs", "GET", "/v1/epochs", c->token, NULL, NULL, &a);
    if (rc == GW_EXIT_OK && args->json)
        rc = gw_admin_print(a.body.data, a.body.len);
    else if (rc == GW_EXIT_OK && !(doc = gw_admin_json(&a, "epochs")))
        rc = GW_EXIT_NOT_OK;
    if (doc) {
        printf("%-9s  %-40s  %-6s  %-24s  %s\n", "epoch_seq", "epoch", "source", "time",
               "first_seq");
        json_array_foreach(json_object_get(doc, "epochs"), i, e)
        {
            printf("%-9lld  %-40s  %-6s  %-24s  %lld\n", num(e, "epoch_seq"),
                   gw_admin_str(e, "epoch", "?"), gw_admin_str(e, "source", "?"),
                   gw_admin_str(e, "time", "-"), num(e, "first_seq"));
        }
        fflush(stdout);
    }
    json_decref(doc);
    gw_admin_answer_free(&a);
    return rc;
}
