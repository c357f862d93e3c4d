/* Filling a gw_error. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>

void gw_error_set(struct gw_error *err, const char *path, const char *fmt, ...)
{
    snprintf(err->path, sizeof(err->path), "%s", path);
    int n = path[0] ? snprintf(err->msg, sizeof(err->msg), "%s: ", err->path) : 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + n, sizeof(err->msg) - (size_t)n, fmt, ap);
    va_end(ap);
}
