/* Whole-file reading for the loaders. */
#ifndef SHARDGATE_GW_FILEIO_H
#define SHARDGATE_GW_FILEIO_H

#include <stddef.h>

/* Reads the file at `path` into a NUL-terminated malloc'd buffer. Returns 0, or -errno. */
int gw_file_read(const char *path, char **out, size_t *len);

#endif
