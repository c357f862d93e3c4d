/* The gateway's one monotonic clock and its one sleep. */
#ifndef SHARDGATE_GW_TIMING_H
#define SHARDGATE_GW_TIMING_H

#include <stdint.h>

/* Nanoseconds on CLOCK_MONOTONIC: for durations and deadlines, never for wall time. */
uint64_t gw_now_ns(void);

/* What gw_now_ns reads: CLOCK_MONOTONIC, unless the simulator (tests/sim/) set its own clock
 * before any thread that reads it started (docs/decisions.md §57). */
extern uint64_t (*gw_clock_ns)(void);

/* Seconds since the Unix epoch on CLOCK_REALTIME: for timestamps shown to people and metrics. */
double gw_unix_s(void);

/* Sleeps `ms` milliseconds in full: a signal that interrupts it does not cut it short. */
void gw_sleep_ms(unsigned ms);

#endif
