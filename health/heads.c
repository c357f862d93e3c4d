/* The request-head deadline of `serve` (heads.h): waiting connections, oldest first. */
/* Connections are shut down, never closed, from here: libmicrohttpd reads the end of the stream
 * and closes them itself. CLOSED is notified before it closes the socket and is handled under
 * the same lock as every shutdown, so a shutdown never reaches a reused descriptor. */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "heads.h"

static double hc_heads_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void hc_heads_unlink(struct hc_heads *h, struct hc_head *e)
{
    if (!e->waiting)
        return;
    *(e->prev ? &e->prev->next : &h->first) = e->next;
    *(e->next ? &e->next->prev : &h->last) = e->prev;
    e->prev = e->next = NULL;
    e->waiting = 0;
}

static void hc_heads_wait(struct hc_heads *h, struct hc_head *e)
{
    e->since = hc_heads_now();
    e->prev = h->last;
    e->next = NULL;
    *(h->last ? &h->last->next : &h->first) = e;
    h->last = e;
    e->waiting = 1;
}

static void hc_heads_cut(struct hc_heads *h, struct hc_head *e)
{
    hc_heads_unlink(h, e);
    shutdown(e->fd, SHUT_RDWR);
}

static void *hc_heads_loop(void *arg)
{
    struct hc_heads *h = arg;
    pthread_mutex_lock(&h->lock);
    while (!h->stop) {
        double now = hc_heads_now();
        while (h->first && now - h->first->since >= HC_HEAD_TIMEOUT_S)
            hc_heads_cut(h, h->first);
        double next = h->first ? h->first->since + HC_HEAD_TIMEOUT_S : now + 1;
        struct timespec ts = {(time_t)next, (long)((next - (double)(time_t)next) * 1e9)};
        pthread_cond_timedwait(&h->wake, &h->lock, &ts);
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

int hc_heads_start(struct hc_heads *h)
{
    pthread_condattr_t attr;
    h->first = h->last = NULL;
    h->open = 0;
    h->stop = h->started = 0;
    pthread_mutex_init(&h->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&h->wake, &attr);
    pthread_condattr_destroy(&attr);
    int rc = pthread_create(&h->thread, NULL, hc_heads_loop, h);
    h->started = rc == 0;
    return -rc;
}

void hc_heads_stop(struct hc_heads *h)
{
    if (h->started) {
        pthread_mutex_lock(&h->lock);
        h->stop = 1;
        pthread_cond_signal(&h->wake);
        pthread_mutex_unlock(&h->lock);
        pthread_join(h->thread, NULL);
        h->started = 0;
    }
}

static void hc_heads_opened(struct hc_heads *h, struct MHD_Connection *conn, void **ctx)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct hc_head *e = info ? calloc(1, sizeof *e) : NULL;
    *ctx = e;
    pthread_mutex_lock(&h->lock);
    h->open++;
    if (e) {
        e->fd = info->connect_fd;
        hc_heads_wait(h, e);
    }
    if (h->open > HC_HEADS_MAX && h->first && h->first != e)
        hc_heads_cut(h, h->first); /* the longest waiting makes room */
    pthread_mutex_unlock(&h->lock);
}

void hc_heads_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                     enum MHD_ConnectionNotificationCode code)
{
    struct hc_heads *h = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        hc_heads_opened(h, conn, socket_context);
        return;
    }
    struct hc_head *e = *socket_context;
    pthread_mutex_lock(&h->lock);
    h->open--;
    if (e)
        hc_heads_unlink(h, e);
    pthread_mutex_unlock(&h->lock);
    free(e);
    *socket_context = NULL;
}

static struct hc_head *hc_heads_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

void hc_heads_began(struct hc_heads *h, struct MHD_Connection *conn)
{
    struct hc_head *e = hc_heads_of(conn);
    if (e) {
        pthread_mutex_lock(&h->lock);
        hc_heads_unlink(h, e);
        pthread_mutex_unlock(&h->lock);
    }
}

void hc_heads_ended(struct hc_heads *h, struct MHD_Connection *conn)
{
    struct hc_head *e = hc_heads_of(conn);
    if (e) {
        pthread_mutex_lock(&h->lock);
        if (!e->waiting)
            hc_heads_wait(h, e);
        pthread_mutex_unlock(&h->lock);
    }
}
