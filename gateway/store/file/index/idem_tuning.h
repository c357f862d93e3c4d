/* The idempotency index's tuning (gw_idem_open_tuned), apart so that its state can hold it
 * without the whole face. */
#ifndef SHARDGATE_GW_IDEM_TUNING_H
#define SHARDGATE_GW_IDEM_TUNING_H

#include <stddef.h>
#include <stdint.h>

/* For tests and benchmarks: sizes, the clock, and background work on demand. */
struct gw_idem_tuning {
    size_t table_slots;              /* slots of each in-RAM table, a power of two; 0: 2^18 */
    uint64_t merge_base;             /* runs below 4x this are the smallest tier; 0: 65536 */
    uint64_t (*now_ms)(void *clock); /* NULL: the wall clock (CLOCK_REALTIME) */
    void *clock;
    int no_thread; /* 1: no background thread; gw_idem_maintain does its work */
};

#endif
