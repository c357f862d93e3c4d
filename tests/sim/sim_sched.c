/* The simulator's scheduler: one turn, passed at every wait, join and thread end. */
#include "sim_sched.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_rng.h"
#include "timing.h"
#include "worker.h"

enum { RUNNABLE, BLOCKED, EXITED };

struct sim_thread {
    int state;
    const void *waits_on; /* the worker, event or thread it waits for */
    uint64_t deadline;    /* 0: none */
    int timed_out;
    struct gw_worker *worker; /* NULL: the driver */
    void *(*fn)(void *);
    void *arg;
    struct sim_thread *next; /* in start order */
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t turn;
    struct sim_thread *threads, driver;
    struct sim_thread *holder;
    uint64_t now, switches;
    struct sim_rng rng;
} S = {.lock = PTHREAD_MUTEX_INITIALIZER, .turn = PTHREAD_COND_INITIALIZER};

static __thread struct sim_thread *self;

static uint64_t sim_now(void)
{
    return __atomic_load_n(&S.now, __ATOMIC_SEQ_CST);
}

/* With S.lock held: the threads whose deadline has come can run. */
static void expire(void)
{
    for (struct sim_thread *t = S.threads; t; t = t->next)
        if (t->state == BLOCKED && t->deadline && t->deadline <= S.now) {
            t->state = RUNNABLE;
            t->timed_out = 1;
        }
}

/* With S.lock held: hands the turn to a thread that can run, chosen by the seed; moves time to
 * the earliest deadline when none can. */
static void pass_turn(void)
{
    for (;;) {
        size_t n = 0;
        for (struct sim_thread *t = S.threads; t; t = t->next)
            n += t->state == RUNNABLE;
        if (n) {
            size_t k = sim_rng_below(&S.rng, n);
            for (struct sim_thread *t = S.threads; t; t = t->next)
                if (t->state == RUNNABLE && k-- == 0) {
                    S.holder = t;
                    break;
                }
            S.switches++;
            pthread_cond_broadcast(&S.turn);
            return;
        }
        uint64_t earliest = 0;
        for (struct sim_thread *t = S.threads; t; t = t->next)
            if (t->state == BLOCKED && t->deadline && (!earliest || t->deadline < earliest))
                earliest = t->deadline;
        if (!earliest) {
            fprintf(stderr, "sim: every thread waits and none has a deadline\n");
            abort();
        }
        __atomic_store_n(&S.now, earliest, __ATOMIC_SEQ_CST);
        expire();
    }
}

/* With S.lock held: waits until the turn is this thread's. */
static void await_turn(void)
{
    while (S.holder != self)
        pthread_cond_wait(&S.turn, &S.lock);
}

/* With S.lock held: this thread waits for `on` until `deadline`, handing the turn on; `held`
 * (the caller's lock) is let go meanwhile. Returns 1 when the deadline passed. */
static int block_on(const void *on, uint64_t deadline, pthread_mutex_t *held)
{
    self->state = BLOCKED;
    self->waits_on = on;
    self->deadline = deadline;
    self->timed_out = 0;
    pass_turn();
    if (held) {
        pthread_mutex_unlock(&S.lock);
        pthread_mutex_unlock(held);
        pthread_mutex_lock(&S.lock);
    }
    await_turn();
    int timed_out = self->timed_out;
    if (held) {
        pthread_mutex_unlock(&S.lock);
        pthread_mutex_lock(held);
        pthread_mutex_lock(&S.lock);
    }
    return timed_out;
}

/* With S.lock held: whatever waits on `on` can run. */
static void release(const void *on)
{
    for (struct sim_thread *t = S.threads; t; t = t->next)
        if (t->state == BLOCKED && t->waits_on == on) {
            t->state = RUNNABLE;
            t->timed_out = 0;
        }
}

static void *trampoline(void *arg)
{
    struct sim_thread *t = arg;
    self = t;
    pthread_mutex_lock(&S.lock);
    await_turn();
    pthread_mutex_unlock(&S.lock);
    void *ret = t->fn(t->arg);
    pthread_mutex_lock(&S.lock);
    t->state = EXITED;
    release(t);
    pass_turn();
    pthread_mutex_unlock(&S.lock);
    return ret;
}

static int sim_create(struct gw_worker *w, void *(*fn)(void *), void *arg)
{
    struct sim_thread *t = calloc(1, sizeof(*t));
    if (!t)
        return 12; /* ENOMEM */
    t->state = RUNNABLE;
    t->worker = w;
    t->fn = fn;
    t->arg = arg;
    pthread_mutex_lock(&S.lock);
    struct sim_thread **end = &S.threads;
    while (*end)
        end = &(*end)->next;
    *end = t;
    pthread_mutex_unlock(&S.lock);
    int rc = pthread_create(&w->thread, NULL, trampoline, t);
    if (rc != 0) {
        pthread_mutex_lock(&S.lock);
        *end = NULL;
        pthread_mutex_unlock(&S.lock);
        free(t);
    }
    return rc;
}

static int sim_wait(struct gw_worker *w, uint64_t deadline)
{
    pthread_mutex_lock(&S.lock);
    int timed_out = deadline && deadline <= S.now ? 1 : block_on(w, deadline, &w->lock);
    pthread_mutex_unlock(&S.lock);
    return timed_out;
}

static void sim_wake(struct gw_worker *w)
{
    pthread_mutex_lock(&S.lock);
    release(w);
    pthread_mutex_unlock(&S.lock);
}

static void sim_join(struct gw_worker *w)
{
    pthread_mutex_lock(&S.lock);
    struct sim_thread **at = &S.threads;
    while (*at && (*at)->worker != w)
        at = &(*at)->next;
    struct sim_thread *t = *at;
    if (!t) {
        fprintf(stderr, "sim: join of a thread it did not start\n");
        abort();
    }
    if (t->state != EXITED)
        block_on(t, 0, NULL);
    for (at = &S.threads; *at != t; at = &(*at)->next)
        ;
    *at = t->next;
    pthread_mutex_unlock(&S.lock);
    pthread_join(w->thread, NULL);
    free(t);
}

static void sim_event_wait(struct gw_event *e)
{
    pthread_mutex_lock(&S.lock);
    while (!e->done)
        block_on(e, 0, &e->lock);
    pthread_mutex_unlock(&S.lock);
}

static void sim_event_set(struct gw_event *e)
{
    pthread_mutex_lock(&S.lock);
    release(e);
    pthread_mutex_unlock(&S.lock);
}

static const struct gw_sched sim_sched = {sim_create, sim_wait,       sim_wake,
                                          sim_join,   sim_event_wait, sim_event_set};

void sim_sched_install(uint64_t seed)
{
    memset(&S.driver, 0, sizeof(S.driver));
    S.driver.state = RUNNABLE;
    S.threads = &S.driver;
    S.holder = self = &S.driver;
    S.now = 1;
    S.switches = 0;
    sim_rng_seed(&S.rng, seed);
    gw_sched = sim_sched;
    gw_clock_ns = sim_now;
}

void sim_sched_uninstall(void)
{
    gw_sched = gw_sched_os;
    S.threads = NULL;
    S.holder = NULL;
}

void sim_sched_sleep(uint64_t ns)
{
    pthread_mutex_lock(&S.lock);
    block_on(&S.driver, S.now + ns, NULL);
    pthread_mutex_unlock(&S.lock);
}

uint64_t sim_sched_switches(void)
{
    return S.switches;
}

void sim_sched_reseed(uint64_t seed)
{
    sim_rng_seed(&S.rng, seed);
}
