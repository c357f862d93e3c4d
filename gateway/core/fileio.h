/* Whole-file reading for the loaders, and the atomic replacement of a file. */
#ifndef SHARDGATE_GW_FILEIO_H
#define SHARDGATE_GW_FILEIO_H

#include <stddef.h>
#include <sys/types.h>

/* Reads the file at `path` into a NUL-terminated malloc'd buffer. Returns 0, or -errno. */
int gw_file_read(const char *path, char **out, size_t *len);

/* Writes all `len` bytes at fd's offset, retrying short writes and EINTR. Returns 0, or -errno
 * (-EIO when write returns 0). */
int gw_file_write_all(int fd, const char *data, size_t len);

/* Replaces the file at `path` with `len` bytes so that a crash leaves the old or the new file,
 * never a torn one: a temp file in the same directory, fsync, rename, fsync of the directory
 * (docs/api.md §15). The file keeps its mode (`mode` when new). Returns 0, or -errno (the temp file
 * removed). */
int gw_file_replace(const char *path, const char *data, size_t len, mode_t mode);

#endif
