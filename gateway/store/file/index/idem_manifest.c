/* manifest.json of the idempotency index: one compact JSON line ending in its own SHA-256,
 * as a checkpoint does (docs/journal.md §9). */
#include "idem_manifest.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "fileio.h"
#include "idem_run.h"
#include "io.h"

#define SHA_KEY ",\"sha256\":\""

static void render(struct gw_buf *b, const struct gw_idem_manifest *m)
{
    gw_buf_puts(b, "{\"type\":\"idempotency_index\",\"version\":1");
    gw_buf_field_u64(b, ",\"durable_seq\":", m->durable_seq);
    gw_buf_field_u64(b, ",\"next_run\":", m->next_run);
    gw_buf_puts(b, ",\"runs\":[");
    for (size_t i = 0; i < m->nruns; i++) {
        gw_buf_field_u64(b, i ? ",{\"id\":" : "{\"id\":", m->runs[i].id);
        gw_buf_field_u64(b, ",\"count\":", m->runs[i].count);
        gw_buf_puts(b, ",\"sha256\":\"");
        gw_buf_hex(b, m->runs[i].sha256, SHA256_DIGEST_LENGTH);
        gw_buf_puts(b, "\"}");
    }
    gw_buf_puts(b, "]");
}

static void sha_hex(char out[2 * SHA256_DIGEST_LENGTH + 1], const void *data, size_t len)
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(data, len, md);
    for (int i = 0; i < SHA256_DIGEST_LENGTH; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

int gw_idem_manifest_write(const char *dir, const struct gw_idem_manifest *m)
{
    struct gw_buf b;
    gw_buf_init(&b);
    render(&b, m);
    char hex[2 * SHA256_DIGEST_LENGTH + 1];
    if (!b.failed)
        sha_hex(hex, b.data, b.len);
    gw_buf_puts(&b, SHA_KEY);
    gw_buf_puts(&b, b.failed ? "" : hex);
    gw_buf_puts(&b, "\"}\n");
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, GW_IDEM_MANIFEST);
    int rc = b.failed ? -ENOMEM : gw_file_replace(path, b.data, b.len, 0644);
    gw_buf_free(&b);
    return rc;
}

static int hex_bytes(const char *hex, unsigned char *out, size_t n)
{
    if (!hex || strlen(hex) != 2 * n)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (sscanf(hex + 2 * i, "%2hhx", &out[i]) != 1)
            return -1;
    return 0;
}

/* The checksum: of the bytes before the last ,"sha256":" (runs have one each) — a torn or
 * edited manifest fails it. */
static const char *check_sum(const char *text, size_t len)
{
    const char *at = NULL;
    for (const char *p = strstr(text, SHA_KEY); p; p = strstr(p + 1, SHA_KEY))
        at = p;
    if (!at || len < 2)
        return "manifest has no sha256";
    char hex[2 * SHA256_DIGEST_LENGTH + 1];
    sha_hex(hex, text, (size_t)(at - text));
    if (strncmp(at + strlen(SHA_KEY), hex, 2 * SHA256_DIGEST_LENGTH) != 0)
        return "manifest checksum mismatch";
    return NULL;
}

static const char *parse_runs(json_t *runs, struct gw_idem_manifest *m)
{
    m->nruns = json_array_size(runs);
    m->runs = calloc(m->nruns ? m->nruns : 1, sizeof(*m->runs));
    if (!m->runs)
        return "out of memory";
    for (size_t i = 0; i < m->nruns; i++) {
        json_t *r = json_array_get(runs, i);
        json_t *id = json_object_get(r, "id"), *count = json_object_get(r, "count");
        if (!json_is_integer(id) || !json_is_integer(count) ||
            hex_bytes(json_string_value(json_object_get(r, "sha256")), m->runs[i].sha256,
                      SHA256_DIGEST_LENGTH))
            return "manifest run entry malformed";
        m->runs[i].id = (uint64_t)json_integer_value(id);
        m->runs[i].count = (uint64_t)json_integer_value(count);
    }
    return NULL;
}

static const char *parse(const char *text, struct gw_idem_manifest *m)
{
    json_t *root = json_loads(text, 0, NULL);
    json_t *durable = json_object_get(root, "durable_seq");
    json_t *next = json_object_get(root, "next_run"), *runs = json_object_get(root, "runs");
    const char *why = NULL;
    if (!json_is_integer(durable) || !json_is_integer(next) || !json_is_array(runs) ||
        json_integer_value(json_object_get(root, "version")) != 1)
        why = "manifest malformed";
    else
        why = parse_runs(runs, m);
    if (!why) {
        m->durable_seq = (uint64_t)json_integer_value(durable);
        m->next_run = (uint64_t)json_integer_value(next);
    }
    json_decref(root);
    return why;
}

int gw_idem_manifest_read(const char *dir, struct gw_idem_manifest *m, const char **why)
{
    memset(m, 0, sizeof(*m));
    char path[4096], *text;
    size_t len;
    snprintf(path, sizeof(path), "%s/%s", dir, GW_IDEM_MANIFEST);
    int rc = gw_file_read(path, &text, &len);
    if (rc != 0) {
        *why = "cannot read the manifest";
        return rc == -ENOENT || rc == -ENOMEM ? rc : -EINVAL;
    }
    *why = check_sum(text, len);
    if (!*why)
        *why = parse(text, m);
    free(text);
    if (!*why)
        return 0;
    gw_idem_manifest_free(m);
    return strcmp(*why, "out of memory") == 0 ? -ENOMEM : -EINVAL;
}

void gw_idem_manifest_free(struct gw_idem_manifest *m)
{
    free(m->runs);
    memset(m, 0, sizeof(*m));
}

static int listed(const char *name, const struct gw_idem_manifest *m)
{
    if (strcmp(name, GW_IDEM_MANIFEST) == 0 || strcmp(name, GW_IDEM_LOCK) == 0)
        return 1;
    char run[64];
    for (size_t i = 0; i < m->nruns; i++) {
        gw_idem_run_name(run, sizeof(run), m->runs[i].id);
        if (strcmp(name, run) == 0)
            return 1;
    }
    return 0;
}

void gw_idem_manifest_sweep(const char *dir, const struct gw_idem_manifest *m)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || listed(e->d_name, m))
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        gw_io.unlink(path);
    }
    closedir(d);
}
