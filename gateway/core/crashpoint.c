/* Named kill -9 points for the model-based operation test (docs/tools.md §9). */
#include "crashpoint.h"

#ifdef SHARDGATE_CRASH_POINTS
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "log.h"

void gw_crash_point(const char *point)
{
    const char *want = getenv("SHARDGATE_TEST_CRASH_AT");
    if (!want || strcmp(want, point) != 0)
        return;
    struct gw_buf f;
    gw_buf_init(&f);
    gw_log_str(&f, "point", point);
    gw_log_event("test_crash_point", &f);
    raise(SIGKILL);
}
#endif
