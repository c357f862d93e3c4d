/* The simulator's scheduler (docs/decisions.md §57): the store's threads run one at a time, the
 * next chosen by the seed from those that can run; time moves only when none can, to the
 * earliest deadline. Installed under gw_sched and gw_clock_ns by sim_sched_install. */
#ifndef SHARDGATE_SIM_SCHED_H
#define SHARDGATE_SIM_SCHED_H

#include <stdint.h>

/* Makes the calling thread the driver, holding the turn, with the clock at 0. */
void sim_sched_install(uint64_t seed);

/* The seed of the choices from now on. */
void sim_sched_reseed(uint64_t seed);

/* Gives back the OS's scheduler and clock (once no worker runs). */
void sim_sched_uninstall(void);

/* The driver lets `ns` of simulated time pass: every thread runs until all wait. */
void sim_sched_sleep(uint64_t ns);

/* Turns handed over so far. */
uint64_t sim_sched_switches(void);

#endif
