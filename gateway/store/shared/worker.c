/* One start, wake and stop for the store's and the server's background threads. */
#include "worker.h"

#include <string.h>
#include <time.h>

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
