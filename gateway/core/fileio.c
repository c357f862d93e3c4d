/* Whole-file reading for the loaders, and the atomic replacement of a file. */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"

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

int gw_file_write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = gw_io.write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The most iovecs one writev takes on Linux (UIO_MAXIOV; POSIX's IOV_MAX is at least 16). */
#define WRITEV_MAX 1024

int gw_file_writev_all(int fd, const struct iovec *iov, int n)
{
    size_t done = 0; /* bytes of iov[0] already written */
    while (n > 0) {
        if (done == iov[0].iov_len) {
            iov++, n--, done = 0;
            continue;
        }
        ssize_t w =
            done ? gw_io.write(fd, (const char *)iov[0].iov_base + done, iov[0].iov_len - done)
                 : gw_io.writev(fd, iov, n < WRITEV_MAX ? n : WRITEV_MAX);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        done += (size_t)w;
        while (n > 0 && done >= iov[0].iov_len) {
            done -= iov[0].iov_len;
            iov++, n--;
        }
    }
    return 0;
}

int gw_sync_dir(const char *dir)
{
    int fd = gw_io.open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int rc = gw_io.fsync(fd) == 0 ? 0 : -errno;
    close(fd);
    return rc;
}

int gw_durable_open(struct gw_durable_file *f, const char *path, const char *tmp, mode_t mode)
{
    f->fd = -1;
    if (snprintf(f->path, sizeof(f->path), "%s", path) >= (int)sizeof(f->path) ||
        snprintf(f->tmp, sizeof(f->tmp), "%s", tmp) >= (int)sizeof(f->tmp)) {
        f->tmp[0] = '\0'; /* nothing to remove */
        return -ENAMETOOLONG;
    }
    f->fd = gw_io.open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
    return f->fd < 0 ? -errno : 0;
}

int gw_durable_sync(struct gw_durable_file *f)
{
    /* The file is new, so fsync costs what fdatasync would, and it covers the mode too. */
    int rc = gw_io.fsync(f->fd) == 0 ? 0 : -errno;
    if (close(f->fd) != 0 && rc == 0)
        rc = -errno;
    f->fd = -1;
    if (rc != 0)
        gw_io.unlink(f->tmp);
    return rc;
}

int gw_durable_install(struct gw_durable_file *f)
{
    if (gw_io.rename(f->tmp, f->path) != 0) {
        int rc = -errno;
        gw_io.unlink(f->tmp);
        f->tmp[0] = '\0';
        return rc;
    }
    f->tmp[0] = '\0'; /* nothing to abandon from here on */
    char *slash = strrchr(f->path, '/');
    if (!slash)
        return gw_sync_dir(".");
    if (slash == f->path)
        return gw_sync_dir("/");
    *slash = '\0';
    int rc = gw_sync_dir(f->path);
    *slash = '/';
    return rc;
}

int gw_durable_commit(struct gw_durable_file *f)
{
    int rc = gw_durable_sync(f);
    return rc != 0 ? rc : gw_durable_install(f);
}

void gw_durable_abandon(struct gw_durable_file *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    if (f->tmp[0])
        gw_io.unlink(f->tmp);
}

int gw_durable_write(const char *path, const char *tmp, const void *data, size_t len, mode_t mode)
{
    struct gw_durable_file f;
    int rc = gw_durable_open(&f, path, tmp, mode);
    if (rc != 0)
        return rc;
    rc = gw_file_write_all(f.fd, data, len);
    if (rc != 0) {
        gw_durable_abandon(&f);
        return rc;
    }
    return gw_durable_commit(&f);
}

int gw_file_stage(struct gw_durable_file *f, const char *path, const char *data, size_t len,
                  mode_t mode)
{
    char tmp[4096];
    f->fd = -1;
    f->tmp[0] = '\0';
    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    struct stat st;
    if (stat(path, &st) == 0)
        mode = st.st_mode & 07777; /* the file keeps its permissions */
    int rc = gw_durable_open(f, path, tmp, mode);
    if (rc == 0)
        rc = gw_file_write_all(f->fd, data, len);
    if (rc == 0)
        rc = gw_durable_sync(f); /* on failure, the temporary file is removed */
    else
        gw_durable_abandon(f);
    if (rc != 0)
        f->tmp[0] = '\0';
    return rc;
}

int gw_file_replace(const char *path, const char *data, size_t len, mode_t mode)
{
    struct gw_durable_file f;
    int rc = gw_file_stage(&f, path, data, len, mode);
    return rc != 0 ? rc : gw_durable_install(&f);
}
