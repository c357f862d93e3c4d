/* Whole-file reading for the loaders, and the atomic replacement of a file. */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int gw_file_read(const char *path, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -errno;
    size_t cap = 4096, n = 0;
    char *data = malloc(cap);
    int rc = data ? 0 : -ENOMEM;
    while (rc == 0) {
        if (cap - n < 2) {
            char *bigger = realloc(data, cap * 2);
            if (!bigger) {
                rc = -ENOMEM;
                break;
            }
            data = bigger;
            cap *= 2;
        }
        size_t got = fread(data + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) {
            rc = ferror(f) ? -EIO : 0;
            break;
        }
    }
    fclose(f);
    if (rc != 0) {
        free(data);
        return rc;
    }
    data[n] = '\0';
    *out = data;
    *len = n;
    return 0;
}

/* The directory part of `path` ("." when it has none), malloc'd. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    return slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
}

int gw_file_write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

int gw_file_replace(const char *path, const char *data, size_t len, mode_t mode)
{
    char *dir = dir_of(path);
    size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!dir || !tmp) {
        free(dir);
        free(tmp);
        return -ENOMEM;
    }
    snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    struct stat st;
    if (stat(path, &st) == 0)
        mode = st.st_mode & 07777; /* the file keeps its permissions */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
    int rc = fd < 0 ? -errno : gw_file_write_all(fd, data, len);
    if (rc == 0 && fsync(fd) != 0)
        rc = -errno;
    if (fd >= 0 && close(fd) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -errno;
    if (rc != 0 && fd >= 0)
        unlink(tmp);
    int dfd = rc == 0 ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (rc == 0 && (dfd < 0 || fsync(dfd) != 0))
        rc = -errno;
    if (dfd >= 0)
        close(dfd);
    free(dir);
    free(tmp);
    return rc;
}
