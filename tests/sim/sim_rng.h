/* The simulator's random numbers: splitmix64, one stream per part, all from the run's seed. */
#ifndef SHARDGATE_SIM_RNG_H
#define SHARDGATE_SIM_RNG_H

#include <stdint.h>

struct sim_rng {
    uint64_t state;
};

static inline void sim_rng_seed(struct sim_rng *r, uint64_t seed)
{
    r->state = seed;
}

static inline uint64_t sim_rng_next(struct sim_rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A number in [0, n); 0 when n is 0. */
static inline uint64_t sim_rng_below(struct sim_rng *r, uint64_t n)
{
    return n ? sim_rng_next(r) % n : 0;
}

#endif
