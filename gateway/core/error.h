/* The error report every gateway module fills: a message that names where, and a JSON path. */
#ifndef SHARDGATE_GW_ERROR_H
#define SHARDGATE_GW_ERROR_H

struct gw_error {
    char path[256]; /* JSON path of the offending value ("" when not about a JSON value) */
    char msg[768];  /* human-readable, self-contained; names the file:line or JSON path */
};

/* Sets path (may be "") and formats msg as "<path>: <text>" (just "<text>" without a path). */
void gw_error_set(struct gw_error *err, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
