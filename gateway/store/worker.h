/* A thread that waits on one condition until it is woken or told to stop: the shape of the
 * journal writer, the checkpointer, the feed's watch, the scrub and the SIGHUP reloader, written
 * once; and an event one thread waits for and another sets. Every wait and wake of them goes
 * through one scheduler table (gw_sched): the OS's threads by default; the simulator
 * (tests/sim/) puts in its own, which runs one thread at a time in an order its seed decides
 * (docs/decisions.md §57). */
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

/* Something one thread waits for (gw_event_wait) and another sets once, with a code. */
struct gw_event {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
    int rc;
};

/* How threads start, wait, are woken and joined. Set gw_sched only while no worker runs. */
struct gw_sched {
    int (*create)(struct gw_worker *w, void *(*fn)(void *), void *arg); /* 0 or an errno */
    int (*wait)(struct gw_worker *w, uint64_t deadline_ns); /* as gw_worker_wait_until */
    void (*wake)(struct gw_worker *w);                      /* w->lock held */
    void (*join)(struct gw_worker *w);                      /* waits for the thread's end */
    void (*event_wait)(struct gw_event *e);                 /* e->lock held, until e->done */
    void (*event_set)(struct gw_event *e);                  /* e->lock held, e->done set */
};

extern struct gw_sched gw_sched;

/* The OS's threads: what gw_sched holds until a test changes it, and what it puts back. */
extern const struct gw_sched gw_sched_os;

/* Initialises the lock and condition and runs fn(arg) on a new thread. Returns 0, or -errno with
 * err->msg "<what>: <reason>" (nothing left initialised). */
int gw_worker_start(struct gw_worker *w, void *(*fn)(void *), void *arg, const char *what,
                    struct gw_error *err);

/* With w->lock held: waits for a wake until deadline_ns (gw_now_ns's clock; 0: no deadline).
 * Returns 1 when the deadline passed, 0 when woken (or spuriously: callers check their state). */
int gw_worker_wait_until(struct gw_worker *w, uint64_t deadline_ns);

/* With w->lock held: gw_worker_wait_until now + ms. */
int gw_worker_wait_ms(struct gw_worker *w, uint64_t ms);

/* With w->lock held: wakes the thread if it waits (it checks its state under the lock). */
void gw_worker_wake(struct gw_worker *w);

/* Sets `stopping`, wakes the thread and joins it; the lock and condition stay valid. Safe to
 * call again, and on a worker never started. */
void gw_worker_join(struct gw_worker *w);

/* Joins if needed and frees the lock and condition. */
void gw_worker_destroy(struct gw_worker *w);

void gw_event_init(struct gw_event *e);

/* Sets the event with `rc` and wakes its waiter. */
void gw_event_set(struct gw_event *e, int rc);

/* Waits until the event is set; returns its rc. */
int gw_event_wait(struct gw_event *e);

void gw_event_destroy(struct gw_event *e);

#endif
