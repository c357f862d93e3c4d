/* Named kill -9 and pause points for the model-based operation test (docs/tools.md §9). */
#include "crashpoint.h"

#ifdef SHARDGATE_CRASH_POINTS
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "log.h"
#include "timing.h"

static int named(const char *env, const char *point)
{
    const char *want = getenv(env);
    return want && strcmp(want, point) == 0;
}

static void log_point(const char *event, const char *point)
{
    struct gw_buf f;
    gw_buf_init(&f);
    gw_log_str(&f, "point", point);
    gw_log_event(event, &f);
}

void gw_crash_point(const char *point)
{
    if (named("SHARDGATE_TEST_PAUSE_AT", point)) {
        log_point("test_pause_point", point);
        gw_sleep_ms(1000);
    }
    if (named("SHARDGATE_TEST_CRASH_AT", point)) {
        log_point("test_crash_point", point);
        raise(SIGKILL);
    }
}
#endif
