/* A state dir's journal read line by line, each checked line's checksum checked first
 * (docs/journal.md §2.1, §8). */
#include "journal_walk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exit.h"
#include "line_check.h"
#include "segment.h"

const char GW_CLI_WALK_STOP[] = "stop", GW_CLI_WALK_NO_MEMORY[] = "out of memory";

static int line_error(const char *command, const char *path, size_t line, const char *what)
{
    fprintf(stderr, "%s: journal: %s:%zu: %s\n", command, path, line, what);
    return GW_EXIT_NOT_OK;
}

/* One file's complete lines; 1 in *stopped when `fn` asked to stop. */
static int walk_file(const char *command, const char *path, int checked, gw_cli_line_fn fn,
                     void *ctx, int *stopped)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: journal: %s: cannot read: %s\n", command, path, strerror(errno));
        return GW_EXIT_NOT_OK;
    }
    char *line = NULL;
    size_t cap = 0, number = 0, body;
    ssize_t n;
    int rc = GW_EXIT_OK;
    while (rc == GW_EXIT_OK && !*stopped && (n = getline(&line, &cap, f)) > 0) {
        number++;
        if (line[n - 1] != '\n')
            break;
        const char *bad = checked && gw_record_check(line, (size_t)n - 1, &body) != 0
                              ? "crc32: checksum mismatch"
                              : fn(ctx, line, (size_t)n - 1);
        if (bad == GW_CLI_WALK_STOP)
            *stopped = 1;
        else if (bad == GW_CLI_WALK_NO_MEMORY)
            rc = GW_EXIT_INTERNAL;
        else if (bad)
            rc = line_error(command, path, number, bad);
    }
    if (rc == GW_EXIT_OK && ferror(f))
        rc = line_error(command, path, number + 1, "read error");
    free(line);
    fclose(f);
    return rc;
}

/* Whether the active journal's lines carry checksums, as its first line decides. */
static int active_checked(const char *path, const struct gw_segments *segs)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int checked = fd >= 0 && fstat(fd, &st) == 0 &&
                  gw_segment_file_checked(fd, gw_segments_next_first(segs), (uint64_t)st.st_size);
    if (fd >= 0)
        close(fd);
    return checked;
}

int gw_cli_walk_journal(const char *command, const char *journal, gw_cli_line_fn fn, void *ctx)
{
    char dir[4096], seg[4200], name[GW_SEGMENT_NAME_MAX];
    struct gw_segments segs = {0};
    struct gw_error err;
    snprintf(dir, sizeof(dir), "%s", journal);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else
        slash[slash == dir] = '\0'; /* "/journal.jsonl": the root */
    if (gw_segments_scan(dir, &segs, &err) != 0) {
        fprintf(stderr, "%s: %s\n", command, err.msg);
        gw_segments_free(&segs);
        return GW_EXIT_NOT_OK;
    }
    int rc = GW_EXIT_OK, stopped = 0;
    for (size_t i = 0; rc == GW_EXIT_OK && !stopped && i < segs.count; i++) {
        gw_segment_name(name, segs.sealed[i].first_seq);
        snprintf(seg, sizeof(seg), "%s/%s", dir, name);
        rc = walk_file(command, seg, segs.sealed[i].checked, fn, ctx, &stopped);
    }
    if (rc == GW_EXIT_OK && !stopped)
        rc = walk_file(command, journal, active_checked(journal, &segs), fn, ctx, &stopped);
    gw_segments_free(&segs);
    return rc;
}
