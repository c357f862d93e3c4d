/* A thread that waits on one condition until it is woken or told to stop: the shape of the
 * journal writer, the checkpointer and the SIGHUP reloader, written once. */
#ifndef SHARDGATE_GW_WORKER_H
#define SHARDGATE_GW_WORKER_H

#include <pthread.h>
#include <stdint.h>

#include "error.h"

struct gw_worker {
    pthread_t thread;
    pthread_mutex_t lock; /* guards `stopping` and whatever state the owner keeps with it */
    pthread_cond_t wake;  /* on CLOCK_MONOTONIC (gw_now_ns's clock) for timed waits */
    int stopping;         /* under lock: the thread finishes its work and returns */
    int started;          /* the thread runs or ran; lock and wake valid until gw_worker_destroy */
    int joined;
};

/* Initialises the lock and condition and runs fn(arg) on a new thread. Returns 0, or -errno with
 * err->msg "<what>: <reason>" (nothing left initialised). */
int gw_worker_start(struct gw_worker *w, void *(*fn)(void *), void *arg, const char *what,
                    struct gw_error *err);

/* With w->lock held: waits for a wake until deadline_ns (gw_now_ns's clock; 0: no deadline).
 * Returns 1 when the deadline passed, 0 when woken (or spuriously: callers check their state). */
int gw_worker_wait_until(struct gw_worker *w, uint64_t deadline_ns);

/* With w->lock held: gw_worker_wait_until now + ms. */
int gw_worker_wait_ms(struct gw_worker *w, uint64_t ms);

/* Sets `stopping`, wakes the thread and joins it; the lock and condition stay valid. Safe to
 * call again, and on a worker never started. */
void gw_worker_join(struct gw_worker *w);

/* Joins if needed and frees the lock and condition. */
void gw_worker_destroy(struct gw_worker *w);

#endif
