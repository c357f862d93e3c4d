/* The libc calls behind gw_io (io.h). */
#include "io.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static int libc_open(const char *path, int flags, mode_t mode)
{
    return open(path, flags, mode);
}

static int libc_openat(int dir_fd, const char *path, int flags, mode_t mode)
{
    return openat(dir_fd, path, flags, mode);
}

#define LIBC_CALLS                                                                                 \
    {                                                                                              \
        .open = libc_open, .openat = libc_openat, .write = write, .writev = writev,                \
        .fsync = fsync, .fdatasync = fdatasync, .ftruncate = ftruncate, .rename = rename,          \
        .unlink = unlink, .mkdir = mkdir                                                           \
    }

const struct gw_io gw_io_libc = LIBC_CALLS;
struct gw_io gw_io = LIBC_CALLS;
