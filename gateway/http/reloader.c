/* The SIGHUP reloader: the signal thread only asks; this thread re-reads the files and runs the
 * apply path, so no reload work ever runs in a signal handler or holds up sigwait. */
#include "request.h"

#include <string.h>

static void *reloader_main(void *arg)
{
    struct gw_server *s = arg;
    struct gw_worker *w = &s->reloader;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!s->reload_pending && !w->stopping)
            gw_worker_wait_until(w, 0);
        if (w->stopping)
            break;
        s->reload_pending = 0; /* SIGHUPs while a reload runs give one more reload */
        pthread_mutex_unlock(&w->lock);
        gw_reload_from_files(s);
        pthread_mutex_lock(&w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

int gw_reloader_start(struct gw_server *s, struct gw_error *err)
{
    pthread_mutex_init(&s->reload_lock, NULL);
    s->reload_pending = 0;
    return gw_worker_start(&s->reloader, reloader_main, s,
                           "shardgate: cannot start the reload thread", err);
}

void gw_reloader_request(struct gw_server *s)
{
    pthread_mutex_lock(&s->reloader.lock);
    s->reload_pending = 1;
    gw_worker_wake(&s->reloader);
    pthread_mutex_unlock(&s->reloader.lock);
}

void gw_reloader_stop(struct gw_server *s)
{
    gw_worker_join(&s->reloader);
}
