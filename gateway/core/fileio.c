/* Whole-file reading for the loaders. */
#include "fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

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
