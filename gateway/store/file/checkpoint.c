/* Writing checkpoints (docs/journal.md §7): the snapshot the writer takes between groups, the
 * line with its sha256, the atomic replacement, and keeping the newest two. */
#include "checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crashpoint.h"
#include "fileio.h"
#include "io.h"

void gw_checkpoint_name(char out[GW_CHECKPOINT_NAME_MAX], uint64_t last_seq)
{
    snprintf(out, GW_CHECKPOINT_NAME_MAX, "checkpoint-%020" PRIu64 ".json", last_seq);
}

int gw_checkpoint_take(struct gw_journal *j, struct gw_ledger *l,
                       struct gw_checkpoint_snapshot *out)
{
    out->last_seq = j->last_seq;
    out->segment = j->segment;
    out->offset = j->size;
    gw_buf_init(&out->body);
    struct gw_buf chain;
    gw_buf_init(&chain);
    gw_chain_write(&chain, &j->chain); /* {"epochs":[...]} */
    if (!chain.failed && chain.len >= 2)
        gw_buf_append(&out->body, chain.data + 1, chain.len - 2);
    gw_buf_free(&chain);
    gw_buf_puts(&out->body, ",");
    int rc = gw_ledger_write_checkpoint(l, &out->body);
    return rc != 0 || chain.failed || out->body.failed ? -ENOMEM : 0;
}

void gw_checkpoint_snapshot_free(struct gw_checkpoint_snapshot *s)
{
    gw_buf_free(&s->body);
}

/* The whole line: the keys in order, the sha256 of everything before `,"sha256"`. */
static int render(const struct gw_checkpoint_snapshot *s, uint64_t index_seq, struct gw_buf *out)
{
    gw_buf_field_u64(out, "{\"type\":\"checkpoint\",\"version\":1,\"last_seq\":", s->last_seq);
    gw_buf_field_u64(out, ",\"segment\":", s->segment);
    gw_buf_field_u64(out, ",\"offset\":", s->offset);
    gw_buf_field_u64(out, ",\"index_seq\":", index_seq);
    gw_buf_puts(out, ",");
    gw_buf_append(out, s->body.data, s->body.len);
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    if (out->failed || !EVP_Digest(out->data, out->len, d, &n, EVP_sha256(), NULL))
        return -ENOMEM;
    gw_buf_puts(out, ",\"sha256\":\"");
    gw_buf_hex(out, d, n);
    gw_buf_puts(out, "\"}\n");
    return out->failed ? -ENOMEM : 0;
}

static int write_file(const char *dir, const struct gw_buf *line, uint64_t last_seq)
{
    char tmp[4096], path[4096], name[GW_CHECKPOINT_NAME_MAX];
    gw_checkpoint_name(name, last_seq);
    snprintf(tmp, sizeof(tmp), "%s/%s", dir, GW_CHECKPOINT_TMP);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    struct gw_durable_file f;
    int rc = gw_durable_open(&f, path, tmp, 0640);
    if (rc != 0)
        return rc;
    if ((rc = gw_file_write_all(f.fd, line->data, line->len)) != 0) {
        gw_durable_abandon(&f);
        return rc;
    }
    rc = gw_durable_sync(&f);
    if (rc == 0) {
        gw_crash_point("checkpoint-written");
        rc = gw_durable_install(&f);
    }
    return rc;
}

/* Unlinks every checkpoint but the newest GW_CHECKPOINT_KEEP (the new one is durable). */
static void prune(const char *dir)
{
    uint64_t *seqs = NULL;
    long n = gw_checkpoint_list(dir, &seqs);
    for (long i = GW_CHECKPOINT_KEEP; i < n; i++) {
        char path[4096], name[GW_CHECKPOINT_NAME_MAX];
        gw_checkpoint_name(name, seqs[i]);
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        gw_io.unlink(path);
    }
    free(seqs);
}

int gw_checkpoint_write(const char *dir, const struct gw_checkpoint_snapshot *s, uint64_t index_seq,
                        struct gw_error *err)
{
    struct gw_buf line;
    gw_buf_init(&line);
    int rc = render(s, index_seq, &line);
    if (rc == 0)
        rc = write_file(dir, &line, s->last_seq);
    if (rc == 0)
        prune(dir);
    else
        gw_error_set(err, "", "checkpoint: %s: cannot write checkpoint %llu: %s", dir,
                     (unsigned long long)s->last_seq, strerror(-rc));
    gw_buf_free(&line);
    return rc;
}

static int newest_first(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x < y) - (x > y);
}

/* Parses `checkpoint-<20 digits>.json`. Returns 0 or -EINVAL. */
static int parse_name(const char *name, uint64_t *seq)
{
    char canon[GW_CHECKPOINT_NAME_MAX];
    if (strncmp(name, "checkpoint-", 11) != 0 || strlen(name) != 11 + 20 + 5)
        return -EINVAL;
    uint64_t v = 0;
    for (int i = 0; i < 20; i++) {
        char c = name[11 + i];
        if (c < '0' || c > '9' || v > (UINT64_MAX - (uint64_t)(c - '0')) / 10)
            return -EINVAL;
        v = v * 10 + (uint64_t)(c - '0');
    }
    gw_checkpoint_name(canon, v);
    *seq = v;
    return strcmp(canon, name) == 0 ? 0 : -EINVAL;
}

long gw_checkpoint_list(const char *dir, uint64_t **out)
{
    DIR *d = opendir(dir);
    *out = NULL;
    if (!d)
        return -errno;
    size_t n = 0, cap = 0;
    struct dirent *e;
    uint64_t seq;
    while ((e = readdir(d)) != NULL) {
        if (parse_name(e->d_name, &seq) != 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            uint64_t *p = realloc(*out, cap * sizeof(*p));
            if (!p) {
                closedir(d);
                free(*out);
                *out = NULL;
                return -ENOMEM;
            }
            *out = p;
        }
        (*out)[n++] = seq;
    }
    closedir(d);
    if (n)
        qsort(*out, n, sizeof(**out), newest_first);
    return (long)n;
}
