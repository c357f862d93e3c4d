/* The idempotency index's tuning (gw_idem_open_tuned), apart so that its state can hold it
 * without the whole face. */
#ifndef SHARDGATE_GW_IDEM_TUNING_H
#define SHARDGATE_GW_IDEM_TUNING_H

#include <stdint.h>

/* For tests: the clock the window is judged by, and a call between a lookup's database read
 * and its second look at the claims (where a commit of the same id can slip in). */
struct gw_idem_tuning {
    uint64_t (*now_ms)(void *clock); /* NULL: the wall clock (CLOCK_REALTIME) */
    void *clock;
    void (*after_read)(void *arg); /* NULL: none */
    void *after_read_arg;
};

#endif
