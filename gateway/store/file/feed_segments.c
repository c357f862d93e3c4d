/* Lists a state dir's journal segments by name, without reading more than an active header. */
#include "feed_segments.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"

#define SEALED_PREFIX "journal-"
#define SEALED_SUFFIX ".jsonl"
#define HEADER_PREFIX "{\"type\":\"segment\",\"first_seq\":"

uint64_t gw_feed_number_after(const char *line, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    if (len <= n || memcmp(line, prefix, n) != 0)
        return 0;
    uint64_t v = 0;
    for (size_t i = n; i < len && line[i] >= '0' && line[i] <= '9' && v < UINT64_MAX / 10; i++)
        v = v * 10 + (uint64_t)(line[i] - '0');
    return v;
}

/* first_seq of a sealed segment's name, or 0 when the name is not one. */
static uint64_t sealed_first_seq(const char *name)
{
    size_t pre = strlen(SEALED_PREFIX), suf = strlen(SEALED_SUFFIX);
    if (strlen(name) != pre + 20 + suf || strncmp(name, SEALED_PREFIX, pre) != 0 ||
        strcmp(name + pre + 20, SEALED_SUFFIX) != 0)
        return 0;
    uint64_t v = 0;
    for (size_t i = pre; i < pre + 20; i++) {
        if (name[i] < '0' || name[i] > '9' || v > (UINT64_MAX - 9) / 10)
            return 0;
        v = v * 10 + (uint64_t)(name[i] - '0');
    }
    return v;
}

/* The active segment's first_seq: its header's, or 1 (the first segment has none). */
static uint64_t active_first_seq(const char *dir)
{
    char path[4096], head[96];
    snprintf(path, sizeof(path), "%s/journal.jsonl", dir);
    int fd = gw_io.open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return 1;
    ssize_t n = pread(fd, head, sizeof(head), 0);
    close(fd);
    uint64_t first = n > 0 ? gw_feed_number_after(head, (size_t)n, HEADER_PREFIX) : 0;
    return first ? first : 1;
}

static int by_first_seq(const void *a, const void *b)
{
    const struct gw_feed_segment *x = a, *y = b;
    if (x->active != y->active)
        return x->active - y->active;
    return (x->first_seq > y->first_seq) - (x->first_seq < y->first_seq);
}

static int push(struct gw_feed_segments *s, size_t *cap, uint64_t first, int active)
{
    if (s->count == *cap) {
        size_t n = *cap ? *cap * 2 : 8;
        struct gw_feed_segment *l = realloc(s->list, n * sizeof(*l));
        if (!l)
            return -ENOMEM;
        s->list = l;
        *cap = n;
    }
    s->list[s->count++] = (struct gw_feed_segment){first, active};
    return 0;
}

int gw_feed_segments_list(const char *dir, struct gw_feed_segments *out)
{
    memset(out, 0, sizeof(*out));
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    size_t cap = 0;
    int rc = 0, has_active = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        uint64_t first = sealed_first_seq(e->d_name);
        if (first)
            rc = push(out, &cap, first, 0);
        else if (strcmp(e->d_name, "journal.jsonl") == 0)
            has_active = 1;
    }
    closedir(d);
    if (rc == 0 && has_active)
        rc = push(out, &cap, active_first_seq(dir), 1);
    if (rc != 0) {
        gw_feed_segments_free(out);
        return rc;
    }
    if (out->count)
        qsort(out->list, out->count, sizeof(*out->list), by_first_seq);
    return 0;
}

void gw_feed_segments_free(struct gw_feed_segments *s)
{
    free(s->list);
    s->list = NULL;
    s->count = 0;
}

void gw_feed_segment_name(const struct gw_feed_segment *s, char *out, size_t size)
{
    if (s->active)
        snprintf(out, size, "journal.jsonl");
    else
        snprintf(out, size, SEALED_PREFIX "%020llu" SEALED_SUFFIX,
                 (unsigned long long)s->first_seq);
}

int gw_feed_segments_copy(const struct gw_feed_segments *from, struct gw_feed_segments *out)
{
    out->count = 0;
    out->list = malloc((from->count ? from->count : 1) * sizeof(*out->list));
    if (!out->list)
        return -ENOMEM;
    memcpy(out->list, from->list, from->count * sizeof(*out->list));
    out->count = from->count;
    return 0;
}
