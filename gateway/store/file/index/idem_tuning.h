/* The idempotency index's tuning (gw_idem_open_tuned), apart so that its state can hold it
 * without the whole face. */
#ifndef SHARDGATE_GW_IDEM_TUNING_H
#define SHARDGATE_GW_IDEM_TUNING_H

#include <stdint.h>

/* For tests: the clock the window is judged by. */
struct gw_idem_tuning {
    uint64_t (*now_ms)(void *clock); /* NULL: the wall clock (CLOCK_REALTIME) */
    void *clock;
};

#endif
