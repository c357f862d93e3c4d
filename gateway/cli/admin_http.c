/* The HTTP requests of `shardgate admin`, on libcurl (docs/decisions.md §36). */
#include "admin_http.h"

#include <curl/curl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

int gw_admin_client_open(struct gw_admin_client *c)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return -1;
    c->curl = curl_easy_init();
    return c->curl ? 0 : -1;
}

void gw_admin_client_close(struct gw_admin_client *c)
{
    if (c->curl)
        curl_easy_cleanup(c->curl);
    c->curl = NULL;
    curl_global_cleanup();
}

void gw_admin_answer_free(struct gw_admin_answer *a)
{
    gw_buf_free(&a->body);
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    struct gw_buf *b = arg;
    gw_buf_append(b, data, size * n);
    return b->failed ? 0 : size * n;
}

/* Keeps the ETag header's value. */
static size_t on_header(char *line, size_t size, size_t n, void *arg)
{
    struct gw_admin_answer *a = arg;
    size_t len = size * n;
    if (len > 5 && strncasecmp(line, "ETag:", 5) == 0) {
        const char *v = line + 5;
        while (*v == ' ' || *v == '\t')
            v++;
        size_t vlen = (size_t)(line + len - v);
        while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
            vlen--;
        if (vlen < sizeof(a->etag)) {
            memcpy(a->etag, v, vlen);
            a->etag[vlen] = '\0';
        }
    }
    return len;
}

/* The request's headers; NULL on no memory. */
static struct curl_slist *headers(const char *accept, const char *token, const char *if_match,
                                  int has_body)
{
    char line[1200];
    snprintf(line, sizeof(line), "Accept: %s", accept ? accept : "application/json");
    struct curl_slist *h = curl_slist_append(NULL, line);
    if (h && has_body)
        h = curl_slist_append(h, "Content-Type: application/json");
    if (h && token) {
        snprintf(line, sizeof(line), "Authorization: Bearer %s", token);
        h = curl_slist_append(h, line);
    }
    if (h && if_match) {
        snprintf(line, sizeof(line), "If-Match: %s", if_match);
        h = curl_slist_append(h, line);
    }
    return h;
}

int gw_admin_request(struct gw_admin_client *c, const char *method, const char *path,
                     const char *token, const char *if_match, const struct gw_buf *body,
                     struct gw_admin_answer *a, char *msg, size_t cap)
{
    char url[4096], error[CURL_ERROR_SIZE] = "";
    CURL *curl = c->curl;
    memset(a, 0, sizeof(*a));
    gw_buf_init(&a->body);
    snprintf(url, sizeof(url), "%s%s", c->url, path);
    struct curl_slist *h = headers(c->accept, token, if_match, body != NULL);
    if (!h) {
        snprintf(msg, cap, "out of memory");
        return -1;
    }
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &a->body);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, a);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, c->timeout_s ? c->timeout_s : 30L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    if (body) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body->data ? body->data : "");
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
    }
    CURLcode rc = curl_easy_perform(curl);
    curl_slist_free_all(h);
    if (rc != CURLE_OK) {
        snprintf(msg, cap, "cannot reach %s: %s", c->url,
                 error[0] ? error : curl_easy_strerror(rc));
        gw_buf_free(&a->body);
        return -1;
    }
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &a->status);
    return 0;
}
