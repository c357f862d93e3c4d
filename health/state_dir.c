/* Listing the state dir and reading its segments (plain or zstd-compressed archives). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <zstd.h>

#include "state_dir.h"

/* "<prefix><20 digits><suffix>" -> the number; returns 0 or -1. */
static int hc_name_number(const char *name, const char *prefix, const char *suffix, uint64_t *out)
{
    size_t p = strlen(prefix), s = strlen(suffix), n = strlen(name);
    if (n != p + 20 + s || strncmp(name, prefix, p) != 0 || strcmp(name + p + 20, suffix) != 0)
        return -1;
    if (strspn(name + p, "0123456789") < 20)
        return -1;
    *out = strtoull(name + p, NULL, 10);
    return 0;
}

static int hc_has_suffix(const char *name, const char *suffix)
{
    size_t n = strlen(name), s = strlen(suffix);
    return n >= s && strcmp(name + n - s, suffix) == 0;
}

/* The segment with this first_seq (appended when absent); NULL on out of memory. */
static struct hc_seg_file *hc_seg_at(struct hc_state_dir *sd, uint64_t first_seq)
{
    for (size_t i = 0; i < sd->n_segs; i++)
        if (sd->segs[i].first_seq == first_seq)
            return &sd->segs[i];
    struct hc_seg_file *s = realloc(sd->segs, (sd->n_segs + 1) * sizeof *s);
    if (s == NULL)
        return NULL;
    sd->segs = s;
    s = &sd->segs[sd->n_segs++];
    memset(s, 0, sizeof *s);
    s->first_seq = first_seq;
    snprintf(s->name, sizeof s->name, "journal-%020llu.jsonl", (unsigned long long)first_seq);
    return s;
}

static int hc_add_checkpoint(struct hc_state_dir *sd, const char *name)
{
    char(*c)[48] = realloc(sd->checkpoints, (sd->n_checkpoints + 1) * sizeof *c);
    if (c == NULL)
        return -ENOMEM;
    sd->checkpoints = c;
    snprintf(c[sd->n_checkpoints++], sizeof c[0], "%s", name);
    return 0;
}

/* One directory entry: a sealed segment, a checkpoint, or nothing of ours. */
static int hc_list_entry(struct hc_state_dir *sd, const char *name, struct hc_report *rep, int slot)
{
    uint64_t num;
    if (hc_name_number(name, "journal-", ".jsonl", &num) == 0) {
        struct hc_seg_file *s = num ? hc_seg_at(sd, num) : NULL;
        if (num == 0)
            hc_report_issue(rep, slot, "journal_segment", name, "first_seq 0 in the name");
        else if (s == NULL)
            return -ENOMEM;
        else
            s->present = 1;
    } else if (strncmp(name, "journal-", 8) == 0 && hc_has_suffix(name, ".jsonl")) {
        hc_report_issue(rep, slot, "journal_segment", name,
                        "not a segment name (journal-<first_seq, 20 digits>.jsonl)");
    } else if (hc_name_number(name, "checkpoint-", ".json", &num) == 0) {
        return hc_add_checkpoint(sd, name);
    } else if (strncmp(name, "checkpoint-", 11) == 0 && hc_has_suffix(name, ".json")) {
        hc_report_issue(rep, slot, "journal_checkpoint", name,
                        "not a checkpoint name (checkpoint-<last_seq, 20 digits>.json)");
    }
    return 0;
}

/* One archive.jsonl line into sd; a bad line is an issue. */
static int hc_archive_entry(struct hc_state_dir *sd, const char *line, long number,
                            struct hc_report *rep, int slot)
{
    char subject[48];
    snprintf(subject, sizeof subject, "archive.jsonl:%ld", number);
    json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, NULL);
    const char *name = json_string_value(json_object_get(o, "name"));
    const char *sha = json_string_value(json_object_get(o, "sha256"));
    const char *as = json_string_value(json_object_get(o, "archived_as"));
    json_t *f = json_object_get(o, "first_seq"), *l = json_object_get(o, "last_seq");
    json_t *b = json_object_get(o, "bytes");
    uint64_t num = 0;
    int rc = 0;
    if (json_object_size(o) != 6 || name == NULL || sha == NULL || as == NULL ||
        strlen(sha) != 64 || strlen(as) >= 64 || !json_is_integer(f) || !json_is_integer(l) ||
        !json_is_integer(b) || hc_name_number(name, "journal-", ".jsonl", &num) != 0 ||
        num != (uint64_t)json_integer_value(f) || num == 0 || strchr(as, '/') != NULL) {
        hc_report_issue(rep, slot, "journal_archive", subject,
                        "not {\"name\",\"first_seq\",\"last_seq\",\"bytes\",\"sha256\","
                        "\"archived_as\"} of a segment");
    } else {
        struct hc_seg_file *s = hc_seg_at(sd, num);
        if (s == NULL) {
            rc = -ENOMEM;
        } else {
            s->archived = 1;
            s->last_seq = (uint64_t)json_integer_value(l);
            s->bytes = (uint64_t)json_integer_value(b);
            snprintf(s->sha256, sizeof s->sha256, "%s", sha);
            snprintf(s->archived_as, sizeof s->archived_as, "%s", as);
        }
    }
    json_decref(o);
    return rc;
}

static int hc_archive_index(struct hc_state_dir *sd, struct hc_report *rep, int slot)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/archive.jsonl", sd->dir);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0; /* nothing archived */
    char *line = NULL;
    size_t cap = 0;
    long number = 0;
    int rc = 0;
    while (rc == 0 && getline(&line, &cap, f) > 0)
        rc = hc_archive_entry(sd, line, ++number, rep, slot);
    free(line);
    fclose(f);
    return rc;
}

/* <dir>/format (docs/journal.md §1.1): absent (a state dir from before the marker) or
 * "shardgate-state 1\n"; a newer format is one this verifier cannot judge, an issue. */
#define HC_STATE_FORMAT 1
static void hc_state_format(const struct hc_state_dir *sd, struct hc_report *rep, int slot)
{
    char path[PATH_MAX + 16], text[64], tail;
    snprintf(path, sizeof path, "%s/format", sd->dir);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        if (errno != ENOENT)
            hc_report_issue(rep, slot, "journal_format", "format", "cannot read: %s",
                            strerror(errno));
        return;
    }
    unsigned long long format = 0;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    if (sscanf(text, "shardgate-state %llu%c", &format, &tail) != 2 || tail != '\n' ||
        strlen(text) != (size_t)snprintf(NULL, 0, "shardgate-state %llu\n", format) || !format)
        hc_report_issue(rep, slot, "journal_format", "format",
                        "not \"shardgate-state N\": cannot judge the state dir");
    else if (format > HC_STATE_FORMAT)
        hc_report_issue(rep, slot, "journal_format", "format",
                        "state dir format %llu is newer than this shardgate-health's (%d): "
                        "cannot judge the state dir",
                        format, HC_STATE_FORMAT);
}

static int hc_seg_cmp(const void *a, const void *b)
{
    uint64_t x = ((const struct hc_seg_file *)a)->first_seq;
    uint64_t y = ((const struct hc_seg_file *)b)->first_seq;
    return (x > y) - (x < y);
}

static int hc_name_cmp(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

int hc_state_dir_list(const char *journal_path, struct hc_state_dir *sd, struct hc_report *rep,
                      int slot, struct hc_err *err)
{
    memset(sd, 0, sizeof *sd);
    const char *slash = strrchr(journal_path, '/');
    if (slash == NULL)
        snprintf(sd->dir, sizeof sd->dir, ".");
    else
        snprintf(sd->dir, sizeof sd->dir, "%.*s", (int)(slash - journal_path + 1), journal_path);
    DIR *d = opendir(sd->dir);
    if (d == NULL) {
        int e = errno;
        return hc_err_set(err, -e, "%s: cannot list: %s", sd->dir, strerror(e));
    }
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d)) != NULL)
        rc = hc_list_entry(sd, de->d_name, rep, slot);
    closedir(d);
    rc = rc ? rc : hc_archive_index(sd, rep, slot);
    if (rc == 0)
        hc_state_format(sd, rep, slot);
    if (rc != 0) {
        hc_state_dir_free(sd);
        return hc_err_set(err, rc, "out of memory");
    }
    if (sd->n_segs > 1) /* qsort's base must not be NULL, even for 0 elements */
        qsort(sd->segs, sd->n_segs, sizeof *sd->segs, hc_seg_cmp);
    if (sd->n_checkpoints > 1)
        qsort(sd->checkpoints, sd->n_checkpoints, sizeof *sd->checkpoints, hc_name_cmp);
    return 0;
}

void hc_state_dir_free(struct hc_state_dir *sd)
{
    free(sd->segs);
    free(sd->checkpoints);
    sd->segs = NULL;
    sd->checkpoints = NULL;
    sd->n_segs = sd->n_checkpoints = 0;
}

/* Decompresses a zstd stream of n bytes into *buf (at most max bytes). */
static int hc_unzstd(const char *in, size_t n, size_t max, char **buf, size_t *len,
                     struct hc_err *err)
{
    ZSTD_DStream *z = ZSTD_createDStream();
    size_t cap = 1 << 16, used = 0, ret = 1;
    char *out = malloc(cap);
    if (z == NULL || out == NULL) {
        ZSTD_freeDStream(z);
        free(out);
        return hc_err_set(err, -ENOMEM, "out of memory");
    }
    ZSTD_inBuffer src = {in, n, 0};
    int rc = 0;
    while (rc == 0 && (src.pos < src.size || ret != 0)) {
        if (used == cap) {
            char *grown = cap > max ? NULL : realloc(out, cap * 2);
            if (grown == NULL) {
                rc = hc_err_set(err, cap > max ? -EFBIG : -ENOMEM, "longer than %zu bytes", max);
                break;
            }
            out = grown;
            cap *= 2;
        }
        ZSTD_outBuffer dst = {out, cap, used};
        size_t before = src.pos;
        ret = ZSTD_decompressStream(z, &dst, &src);
        if (ZSTD_isError(ret))
            rc = hc_err_set(err, -EINVAL, "not zstd data: %s", ZSTD_getErrorName(ret));
        else if (dst.pos == used && src.pos == before && ret != 0)
            rc = hc_err_set(err, -EINVAL, "truncated zstd data");
        used = dst.pos;
    }
    ZSTD_freeDStream(z);
    if (rc != 0) {
        free(out);
        return rc;
    }
    *buf = out;
    *len = used;
    return 0;
}

int hc_state_dir_read(const char *dir, const char *name, size_t max, char **buf, size_t *len,
                      struct hc_err *err)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        int e = errno;
        return hc_err_set(err, -e, "cannot open: %s", strerror(e));
    }
    size_t cap = 1 << 16, n = 0, got;
    char *data = malloc(cap);
    while (data != NULL && (got = fread(data + n, 1, cap - n, f)) > 0) {
        n += got;
        char *grown = n == cap ? realloc(data, cap * 2) : data;
        if (grown == NULL)
            free(data);
        data = grown;
        cap = n == cap ? cap * 2 : cap;
    }
    int bad = data != NULL && ferror(f);
    fclose(f);
    if (data == NULL)
        return hc_err_set(err, -ENOMEM, "out of memory");
    if (bad) {
        free(data);
        return hc_err_set(err, -EIO, "read error");
    }
    if (!hc_has_suffix(name, ".zst")) {
        *buf = data;
        *len = n;
        return 0;
    }
    int rc = hc_unzstd(data, n, max, buf, len, err);
    free(data);
    return rc;
}
