/* JSON event lines on stderr, built in a growable buffer so no value is cut or left raw. */
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void put_key(struct gw_buf *fields, const char *key)
{
    gw_buf_puts(fields, ",");
    gw_buf_json_string(fields, key, strlen(key));
    gw_buf_puts(fields, ":");
}

void gw_log_str(struct gw_buf *fields, const char *key, const char *value)
{
    put_key(fields, key);
    gw_buf_json_string(fields, value, strlen(value));
}

void gw_log_u64(struct gw_buf *fields, const char *key, uint64_t value)
{
    put_key(fields, key);
    gw_buf_u64(fields, value);
}

void gw_log_bool(struct gw_buf *fields, const char *key, int value)
{
    put_key(fields, key);
    gw_buf_puts(fields, value ? "true" : "false");
}

void gw_log_vformat(struct gw_buf *fields, const char *key, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text) {
        vsnprintf(text, (size_t)n + 1, fmt, again);
        size_t len = (size_t)n;
        while (len > 0 && text[len - 1] == '\n')
            len--;
        put_key(fields, key);
        gw_buf_json_string(fields, text, len);
    } else {
        fields->failed = 1;
    }
    va_end(again);
    free(text);
}

void gw_log_event(const char *event, struct gw_buf *fields)
{
    struct gw_buf line;
    gw_buf_init(&line);
    gw_buf_puts(&line, "{\"event\":");
    gw_buf_json_string(&line, event, strlen(event));
    if (fields && !fields->failed)
        gw_buf_append(&line, fields->data, fields->len);
    else if (fields)
        gw_buf_puts(&line, ",\"log_error\":\"out of memory while formatting the fields\"");
    gw_buf_puts(&line, "}\n");
    if (!line.failed && write(STDERR_FILENO, line.data, line.len) < 0)
        line.failed = 1; /* nowhere left to say so */
    gw_buf_free(&line);
    if (fields)
        gw_buf_free(fields);
}
