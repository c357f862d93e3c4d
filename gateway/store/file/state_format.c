/* <state-dir>/format: one line, "shardgate-state N\n" (docs/journal.md §1.1). */
#include "state_format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "number.h"

#define PREFIX "shardgate-state "

/* Reads the marker's number into *format; -EINVAL when the file is not one line of the form. */
static int parse(const char *text, size_t len, uint64_t *format)
{
    size_t n = strlen(PREFIX);
    if (len < n + 2 || memcmp(text, PREFIX, n) != 0 || text[len - 1] != '\n')
        return -EINVAL;
    char digits[24];
    size_t d = len - 1 - n;
    if (d >= sizeof(digits))
        return -EINVAL;
    memcpy(digits, text + n, d);
    digits[d] = '\0';
    return gw_parse_u64(digits, 1, UINT64_MAX, format) == 0 ? 0 : -EINVAL;
}

static int write_marker(const char *dir, struct gw_error *err)
{
    char path[4200], text[64];
    snprintf(path, sizeof(path), "%s/%s", dir, GW_STATE_FORMAT_FILE);
    int n = snprintf(text, sizeof(text), PREFIX "%d\n", GW_STATE_FORMAT);
    int rc = gw_file_replace(path, text, (size_t)n, 0640);
    if (rc != 0)
        gw_error_set(err, "", "journal: %s: cannot write: %s", path, strerror(-rc));
    return rc;
}

int gw_state_format_check(int dir_fd, const char *dir, int write, struct gw_error *err)
{
    char text[64];
    int fd = openat(dir_fd, GW_STATE_FORMAT_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return write ? write_marker(dir, err) : 0;
    ssize_t len = fd < 0 ? -1 : read(fd, text, sizeof(text));
    int e = errno;
    if (fd >= 0)
        close(fd);
    if (len < 0) {
        gw_error_set(err, "", "journal: %s/%s: cannot read: %s", dir, GW_STATE_FORMAT_FILE,
                     strerror(e));
        return -e;
    }
    uint64_t format = 0;
    if (len == (ssize_t)sizeof(text) || parse(text, (size_t)len, &format) != 0) {
        gw_error_set(err, "", "journal: %s/%s:1: not \"" PREFIX "N\" (docs/journal.md §1.1)", dir,
                     GW_STATE_FORMAT_FILE);
        return -EINVAL;
    }
    if (format > GW_STATE_FORMAT) {
        gw_error_set(err, "",
                     "journal: %s/%s: state dir format %llu is newer than this shardgate's (%d): "
                     "run the version that wrote it, or a newer one",
                     dir, GW_STATE_FORMAT_FILE, (unsigned long long)format, GW_STATE_FORMAT);
        return -EINVAL;
    }
    return 0;
}
