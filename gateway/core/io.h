/* The file store's system calls through one table (docs/decisions.md §14): the libc calls by
 * default; an in-process test swaps in its own to inject EIO, ENOSPC, short writes or a "crash"
 * after the Nth call (tests/unit/test_io_faults.c), as SQLite tests its VFS. Set it only while
 * no thread of the store runs. */
#ifndef SHARDGATE_GW_IO_H
#define SHARDGATE_GW_IO_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

struct gw_io {
    int (*open)(const char *path, int flags, mode_t mode);
    int (*openat)(int dir_fd, const char *path, int flags, mode_t mode);
    ssize_t (*write)(int fd, const void *data, size_t len);
    ssize_t (*writev)(int fd, const struct iovec *iov, int n);
    int (*fsync)(int fd);
    int (*fdatasync)(int fd);
    int (*ftruncate)(int fd, off_t len);
    int (*rename)(const char *from, const char *to);
    int (*unlink)(const char *path);
    int (*mkdir)(const char *path, mode_t mode);
};

extern struct gw_io gw_io;

/* The libc calls: what gw_io holds until a test changes it, and what it puts back. */
extern const struct gw_io gw_io_libc;

#endif
