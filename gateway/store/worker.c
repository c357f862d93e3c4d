/* One start, wake and stop for the store's and the server's background threads, and the OS's
 * scheduler under them (docs/decisions.md §57). */
#include "worker.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "timing.h"

static int os_create(struct gw_worker *w, void *(*fn)(void *), void *arg)
{
    return pthread_create(&w->thread, NULL, fn, arg);
}

static int os_wait(struct gw_worker *w, uint64_t deadline_ns)
{
    if (!deadline_ns) {
        pthread_cond_wait(&w->wake, &w->lock);
        return 0;
    }
    struct timespec ts = {(time_t)(deadline_ns / 1000000000u), (long)(deadline_ns % 1000000000u)};
    return pthread_cond_timedwait(&w->wake, &w->lock, &ts) == ETIMEDOUT;
}

static void os_wake(struct gw_worker *w)
{
    pthread_cond_signal(&w->wake);
}

static void os_join(struct gw_worker *w)
{
    pthread_join(w->thread, NULL);
}

static void os_event_wait(struct gw_event *e)
{
    while (!e->done)
        pthread_cond_wait(&e->cond, &e->lock);
}

static void os_event_set(struct gw_event *e)
{
    pthread_cond_signal(&e->cond);
}

const struct gw_sched gw_sched_os = {os_create, os_wait,       os_wake,
                                     os_join,   os_event_wait, os_event_set};
struct gw_sched gw_sched = {os_create, os_wait, os_wake, os_join, os_event_wait, os_event_set};

int gw_worker_start(struct gw_worker *w, void *(*fn)(void *), void *arg, const char *what,
                    struct gw_error *err)
{
    memset(w, 0, sizeof(*w));
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&w->lock, NULL);
    int rc = gw_sched.create(w, fn, arg);
    if (rc != 0) {
        gw_error_set(err, "", "%s: %s", what, strerror(rc));
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        return -rc;
    }
    w->started = 1;
    return 0;
}

int gw_worker_wait_until(struct gw_worker *w, uint64_t deadline_ns)
{
    return gw_sched.wait(w, deadline_ns);
}

int gw_worker_wait_ms(struct gw_worker *w, uint64_t ms)
{
    return gw_worker_wait_until(w, gw_now_ns() + ms * 1000000u);
}

void gw_worker_wake(struct gw_worker *w)
{
    gw_sched.wake(w);
}

void gw_worker_join(struct gw_worker *w)
{
    if (!w->started || w->joined)
        return;
    pthread_mutex_lock(&w->lock);
    w->stopping = 1;
    gw_sched.wake(w);
    pthread_mutex_unlock(&w->lock);
    gw_sched.join(w);
    w->joined = 1;
}

void gw_worker_destroy(struct gw_worker *w)
{
    if (!w->started)
        return;
    gw_worker_join(w);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    w->started = 0;
    w->joined = 0;
}

void gw_event_init(struct gw_event *e)
{
    memset(e, 0, sizeof(*e));
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->cond, NULL);
}

void gw_event_set(struct gw_event *e, int rc)
{
    pthread_mutex_lock(&e->lock);
    e->rc = rc;
    e->done = 1;
    gw_sched.event_set(e);
    pthread_mutex_unlock(&e->lock);
}

int gw_event_wait(struct gw_event *e)
{
    pthread_mutex_lock(&e->lock);
    gw_sched.event_wait(e);
    int rc = e->rc;
    pthread_mutex_unlock(&e->lock);
    return rc;
}

void gw_event_destroy(struct gw_event *e)
{
    pthread_cond_destroy(&e->cond);
    pthread_mutex_destroy(&e->lock);
}
