/* The service's event log: one JSON object per line on stderr (docs/operations.md, Logs). Every
 * field value is escaped and written whole, whatever its bytes and length. */
#ifndef SHARDGATE_GW_LOG_H
#define SHARDGATE_GW_LOG_H

#include <stdarg.h>
#include <stdint.h>

#include "buf.h"

/* Appends ,"key":"value" with `value` escaped (any bytes, any length). */
void gw_log_str(struct gw_buf *fields, const char *key, const char *value);

/* Appends ,"key":N. */
void gw_log_u64(struct gw_buf *fields, const char *key, uint64_t value);

/* Appends ,"key":true or ,"key":false. */
void gw_log_bool(struct gw_buf *fields, const char *key, int value);

/* Writes {"event":"<event>"<fields>} and a newline with one write(2), then frees `fields`
 * (NULL for none). */
void gw_log_event(const char *event, struct gw_buf *fields);

/* Formats `fmt` whole (no fixed-size buffer) into ,"key":"..." */
void gw_log_vformat(struct gw_buf *fields, const char *key, const char *fmt, va_list ap);

#endif
