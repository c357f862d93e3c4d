/* An epoch record found in the segments of a state dir (docs/journal.md §2, §6). */
#include "epoch_read.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feed_segments.h"
#include "line_check.h"

static const char EPOCH_PREFIX[] = "{\"type\":\"epoch\"";

/* 1 when the record line[0..len) (checksum member gone) is entry e's. */
static int is_entry(const char *line, size_t len, const struct gw_epoch_entry *e)
{
    json_error_t jerr;
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    json_t *seq = json_object_get(root, "epoch_seq");
    const char *epoch = json_string_value(json_object_get(root, "epoch"));
    int yes = json_is_integer(seq) && (uint64_t)json_integer_value(seq) == e->epoch_seq && epoch &&
              strcmp(epoch, e->epoch) == 0;
    json_decref(root);
    return yes;
}

/* Looks for e's record in one segment file. */
static int scan_file(const char *path, const struct gw_epoch_entry *e, struct gw_buf *out,
                     struct gw_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return errno == ENOENT ? -ENOENT : -errno;
    char *line = NULL;
    size_t cap = 0, number = 0, body;
    ssize_t n;
    int rc = -ENOENT;
    while (rc == -ENOENT && (n = getline(&line, &cap, f)) > 0) {
        number++;
        size_t len = (size_t)n - 1;
        if (line[len] != '\n' || len < sizeof(EPOCH_PREFIX) - 1 ||
            memcmp(line, EPOCH_PREFIX, sizeof(EPOCH_PREFIX) - 1) != 0)
            continue;
        int check = gw_record_check(line, len, &body);
        if (check == -EBADMSG) {
            gw_error_set(err, "", "journal: %s:%zu: crc32: %s", path, number, GW_RECORD_MISMATCH);
            rc = -EBADMSG;
            break;
        }
        size_t had = out->len;
        gw_buf_append(out, line, check == 0 ? body : len); /* without checksums: as written */
        if (check == 0)
            gw_buf_puts(out, "}");
        if (out->failed)
            rc = -ENOMEM;
        else if (is_entry(out->data + had, out->len - had, e))
            rc = 0;
        else
            out->len = had;
    }
    free(line);
    fclose(f);
    return rc;
}

int gw_file_epoch_record(const char *dir, const struct gw_epoch_entry *e, struct gw_buf *out,
                         struct gw_error *err)
{
    struct gw_feed_segments segs;
    int rc = gw_feed_segments_list(dir, &segs);
    if (rc != 0)
        return rc;
    size_t at = 0;
    for (size_t i = 0; i < segs.count; i++)
        if (segs.list[i].first_seq <= e->first_seq)
            at = i;
    rc = -ENOENT;
    for (size_t i = at + 1; rc == -ENOENT && i-- > 0;) {
        char name[64], path[4200];
        gw_feed_segment_name(&segs.list[i], name, sizeof(name));
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        rc = scan_file(path, e, out, err);
    }
    gw_feed_segments_free(&segs);
    return rc;
}
