/* archive.jsonl, the list of the sealed segments `shardgate journal archive` moved away
 * (docs/journal.md §8): read at start (docs/journal.md §6) and by the archive command. */
#include "segment.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad_line(struct gw_error *err, const char *path, size_t lineno, const char *what)
{
    gw_error_set(err, "", "journal: %s:%zu: %s", path, lineno, what);
    return -EINVAL;
}

/* One line, byte-exact: the canonical rendering of what it parses to. */
static int parse_line(const char *line, size_t len, struct gw_segment *e, char **as_name)
{
    char name[64], as[64], sha[GW_SHA256_HEX + 1], again[512];
    unsigned long long first, last, bytes;
    if (len >= sizeof(again) ||
        sscanf(line,
               "{\"name\":\"%63[^\"]\",\"first_seq\":%llu,\"last_seq\":%llu,\"bytes\":%llu,"
               "\"sha256\":\"%64[0-9a-f]\",\"archived_as\":\"%63[^\"]\"}",
               name, &first, &last, &bytes, sha, as) != 6)
        return -EINVAL;
    int n = snprintf(again, sizeof(again),
                     "{\"name\":\"%s\",\"first_seq\":%llu,\"last_seq\":%llu,\"bytes\":%llu,"
                     "\"sha256\":\"%s\",\"archived_as\":\"%s\"}",
                     name, first, last, bytes, sha, as);
    char want[GW_SEGMENT_NAME_MAX];
    gw_segment_name(want, first);
    if ((size_t)n != len || memcmp(again, line, len) != 0 || strlen(sha) != GW_SHA256_HEX ||
        strcmp(name, want) != 0 || last + 1 < first || first == 0)
        return -EINVAL;
    size_t wl = strlen(want);
    if (strncmp(as, want, wl) != 0 || (as[wl] != '\0' && strcmp(as + wl, ".zst") != 0))
        return -EINVAL;
    *e = (struct gw_segment){.first_seq = first, .last_seq = last, .size = bytes};
    memcpy(e->sha256, sha, sizeof(e->sha256));
    *as_name = strdup(as);
    return *as_name ? 0 : -ENOMEM;
}

static int grow(struct gw_segment **out, char ***as, size_t n, size_t *cap)
{
    if (n < *cap)
        return 0;
    size_t c = *cap ? 2 * *cap : 16;
    struct gw_segment *o = realloc(*out, c * sizeof(*o));
    if (o)
        *out = o;
    char **a = o ? realloc(*as, c * sizeof(*a)) : NULL;
    if (a)
        *as = a;
    if (!o || !a)
        return -ENOMEM;
    *cap = c;
    return 0;
}

int gw_archive_list_read(const char *dir, struct gw_segment **out, size_t *n, char ***as_names,
                         struct gw_error *err)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, GW_ARCHIVE_LIST_FILE);
    *out = NULL, *n = 0, *as_names = NULL;
    FILE *f = fopen(path, "re");
    if (!f)
        return errno == ENOENT
                   ? 0
                   : (gw_error_set(err, "", "journal: %s: %s", path, strerror(errno)), -EINVAL);
    char *line = NULL;
    size_t linecap = 0, cap = 0;
    ssize_t len;
    int rc = 0;
    while (rc == 0 && (len = getline(&line, &linecap, f)) > 0) {
        if (line[len - 1] != '\n') {
            rc = bad_line(err, path, *n + 1, "torn: no newline at its end");
            break;
        }
        if ((rc = grow(out, as_names, *n, &cap)) == 0)
            rc = parse_line(line, (size_t)len - 1, &(*out)[*n], &(*as_names)[*n]);
        if (rc == -EINVAL)
            bad_line(err, path, *n + 1, "not an archive entry");
        if (rc == -ENOMEM)
            gw_error_set(err, "", "journal: out of memory");
        if (rc == 0)
            (*n)++;
    }
    free(line);
    fclose(f);
    return rc;
}
