/* Whole-file reading for the loaders, and files put in place durably. */
#ifndef SHARDGATE_GW_FILEIO_H
#define SHARDGATE_GW_FILEIO_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Reads the file at `path` into a NUL-terminated malloc'd buffer. Returns 0, or -errno. */
int gw_file_read(const char *path, char **out, size_t *len);

/* Writes all `len` bytes at fd's offset, retrying short writes and EINTR. Returns 0, or -errno
 * (-EIO when write returns 0). */
int gw_file_write_all(int fd, const char *data, size_t len);

/* The same for the bytes of `n` iovecs in order, by writev (at most 1024 at a time), then
 * write for the rest of one the kernel took in part. */
int gw_file_writev_all(int fd, const struct iovec *iov, int n);

/* A file put in place durably, the one way the gateway does it (docs/decisions.md §14): written
 * under a temporary name in its directory, fsync'd and closed, renamed over its name, the
 * directory fsync'd. A crash leaves the old file or the new one, never a torn one; a failure at
 * any step removes the temporary file. */
struct gw_durable_file {
    int fd; /* open for writing until gw_durable_sync */
    char path[4096], tmp[4096];
};

/* Creates (or truncates) `tmp` with `mode`, to become `path`; both in one directory. Returns 0,
 * -ENAMETOOLONG or -errno. */
int gw_durable_open(struct gw_durable_file *f, const char *path, const char *tmp, mode_t mode);

/* Syncs and closes the temporary file. Returns 0, or -errno with the temporary file removed. */
int gw_durable_sync(struct gw_durable_file *f);

/* Renames the synced temporary file to its name and fsyncs the directory. Returns 0, or -errno
 * with the temporary file removed; either way there is no temporary file to abandon after. */
int gw_durable_install(struct gw_durable_file *f);

/* gw_durable_sync, then gw_durable_install. */
int gw_durable_commit(struct gw_durable_file *f);

/* Closes and removes the temporary file: nothing is put in place. */
void gw_durable_abandon(struct gw_durable_file *f);

/* Fsyncs the directory `dir`, so that a rename or an unlink in it is durable. Returns 0 or
 * -errno. */
int gw_sync_dir(const char *dir);

/* Puts `len` bytes in place as `path`, written as `tmp`: gw_durable_open, the bytes,
 * gw_durable_commit. Returns 0, or -errno with the temporary file removed. */
int gw_durable_write(const char *path, const char *tmp, const void *data, size_t len, mode_t mode);

/* The first half of gw_file_replace: `len` bytes written to `path`.tmp.<pid> and synced, for
 * gw_durable_install (or gw_durable_abandon) to finish. The file keeps its mode (`mode` when
 * new). Returns 0, or -errno with nothing left behind (f is safe to abandon either way). */
int gw_file_stage(struct gw_durable_file *f, const char *path, const char *data, size_t len,
                  mode_t mode);

/* Replaces the file at `path` with `len` bytes: gw_file_stage, then gw_durable_install
 * (docs/api.md §15). Returns 0, or -errno. */
int gw_file_replace(const char *path, const char *data, size_t len, mode_t mode);

#endif
