/* The system-call table of the fault tests (gateway/core/io.h): every call first asks the
 * test's fault_here(writes) whether it fails (that function sets errno); `writes` is 0 for an
 * open that only reads. A write then writes fault_write_len(len) bytes, so a test can make it
 * short. The including test defines both. */
#ifndef SHARDGATE_TEST_FAULTY_IO_H
#define SHARDGATE_TEST_FAULTY_IO_H

#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "io.h"
#include "iov_join.h"

static int fault_here(int writes);
static size_t fault_write_len(size_t len);

static int opens_to_write(int flags)
{
    return (flags & (O_WRONLY | O_RDWR | O_CREAT)) != 0;
}

static int f_open(const char *p, int fl, mode_t m)
{
    return fault_here(opens_to_write(fl)) ? -1 : gw_io_libc.open(p, fl, m);
}

static int f_openat(int d, const char *p, int fl, mode_t m)
{
    return fault_here(opens_to_write(fl)) ? -1 : gw_io_libc.openat(d, p, fl, m);
}

static ssize_t f_write(int fd, const void *b, size_t n)
{
    return fault_here(1) ? -1 : gw_io_libc.write(fd, b, fault_write_len(n));
}

/* A writev is the write of its bytes put together: one call, faulted or shortened as one. */
static ssize_t f_writev(int fd, const struct iovec *iov, int n)
{
    size_t len;
    char *all = iov_join(iov, n, &len);
    if (!all)
        return -1;
    ssize_t w = f_write(fd, all, len);
    free(all);
    return w;
}

static int f_fsync(int fd)
{
    return fault_here(1) ? -1 : gw_io_libc.fsync(fd);
}

static int f_fdatasync(int fd)
{
    return fault_here(1) ? -1 : gw_io_libc.fdatasync(fd);
}

static int f_ftruncate(int fd, off_t n)
{
    return fault_here(1) ? -1 : gw_io_libc.ftruncate(fd, n);
}

static int f_rename(const char *a, const char *b)
{
    return fault_here(1) ? -1 : gw_io_libc.rename(a, b);
}

static int f_unlink(const char *p)
{
    return fault_here(1) ? -1 : gw_io_libc.unlink(p);
}

static int f_mkdir(const char *p, mode_t m)
{
    return fault_here(1) ? -1 : gw_io_libc.mkdir(p, m);
}

static const struct gw_io faulty_io = {.open = f_open,
                                       .openat = f_openat,
                                       .write = f_write,
                                       .writev = f_writev,
                                       .fsync = f_fsync,
                                       .fdatasync = f_fdatasync,
                                       .ftruncate = f_ftruncate,
                                       .rename = f_rename,
                                       .unlink = f_unlink,
                                       .mkdir = f_mkdir};

#endif
