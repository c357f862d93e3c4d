/* Error struct the health library fills on failure; only main.c prints it. */
#ifndef HC_ERROR_H
#define HC_ERROR_H

struct hc_err {
    char msg[512];
};

/* Formats a message into err (if err is not NULL) and returns code, so callers can write
 * `return hc_err_set(err, -EINVAL, "...")`. */
int hc_err_set(struct hc_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
