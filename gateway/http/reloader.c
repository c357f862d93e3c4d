/* The SIGHUP reloader: the signal thread only asks; this thread re-reads the files and runs the
 * apply path, so no reload work ever runs in a signal handler or holds up sigwait. */
#include "request.h"

#include <string.h>

static void *reloader_main(void *arg)
{
    struct gw_server *s = arg;
    pthread_mutex_lock(&s->reload_lock_wait);
    for (;;) {
        while (!s->reload_pending && !s->reload_stopping)
            pthread_cond_wait(&s->reload_wake, &s->reload_lock_wait);
        if (s->reload_stopping)
            break;
        s->reload_pending = 0; /* SIGHUPs while a reload runs give one more reload */
        pthread_mutex_unlock(&s->reload_lock_wait);
        gw_reload_from_files(s);
        pthread_mutex_lock(&s->reload_lock_wait);
    }
    pthread_mutex_unlock(&s->reload_lock_wait);
    return NULL;
}

int gw_reloader_start(struct gw_server *s)
{
    pthread_mutex_init(&s->reload_lock, NULL);
    pthread_mutex_init(&s->reload_lock_wait, NULL);
    pthread_cond_init(&s->reload_wake, NULL);
    s->reload_pending = s->reload_stopping = 0;
    if (pthread_create(&s->reloader, NULL, reloader_main, s) != 0)
        return -1;
    s->reloader_started = 1;
    return 0;
}

void gw_reloader_request(struct gw_server *s)
{
    pthread_mutex_lock(&s->reload_lock_wait);
    s->reload_pending = 1;
    pthread_cond_signal(&s->reload_wake);
    pthread_mutex_unlock(&s->reload_lock_wait);
}

void gw_reloader_stop(struct gw_server *s)
{
    if (!s->reloader_started)
        return;
    pthread_mutex_lock(&s->reload_lock_wait);
    s->reload_stopping = 1;
    pthread_cond_signal(&s->reload_wake);
    pthread_mutex_unlock(&s->reload_lock_wait);
    pthread_join(s->reloader, NULL);
    s->reloader_started = 0;
}
