/* One start, wake and stop for the store's and the server's background threads. */
#include "worker.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "timing.h"

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
    int rc = pthread_create(&w->thread, NULL, fn, arg);
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
    if (!deadline_ns) {
        pthread_cond_wait(&w->wake, &w->lock);
        return 0;
    }
    struct timespec ts = {(time_t)(deadline_ns / 1000000000u), (long)(deadline_ns % 1000000000u)};
    return pthread_cond_timedwait(&w->wake, &w->lock, &ts) == ETIMEDOUT;
}

int gw_worker_wait_ms(struct gw_worker *w, uint64_t ms)
{
    return gw_worker_wait_until(w, gw_now_ns() + ms * 1000000u);
}

void gw_worker_join(struct gw_worker *w)
{
    if (!w->started || w->joined)
        return;
    pthread_mutex_lock(&w->lock);
    w->stopping = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
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
