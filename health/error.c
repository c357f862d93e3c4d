/* Error struct helper: formats a message and passes the error code through. */
#include <stdarg.h>
#include <stdio.h>

#include "error.h"

int hc_err_set(struct hc_err *err, int code, const char *fmt, ...)
{
    if (err != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}
