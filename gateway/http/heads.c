/* The request-head deadline and the eviction of waiting connections (heads.h). */
#include "heads.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "log.h"
#include "timing.h"

static void unlink_head(struct gw_heads *h, struct gw_head *e)
{
    if (!e->waiting)
        return;
    *(e->prev ? &e->prev->next : &h->first) = e->next;
    *(e->next ? &e->next->prev : &h->last) = e->prev;
    e->prev = e->next = NULL;
    e->waiting = 0;
}

/* Appended last: `since` only grows, so the list stays oldest first. */
static void start_waiting(struct gw_heads *h, struct gw_head *e, uint64_t now)
{
    e->since = now;
    e->prev = h->last;
    e->next = NULL;
    *(h->last ? &h->last->next : &h->first) = e;
    h->last = e;
    e->waiting = 1;
}

/* Shut down, not closed: libmicrohttpd reads the end of the stream and closes it itself. Off
 * the list, so it is shut down once. Under h->lock. */
static void cut(struct gw_heads *h, struct gw_head *e)
{
    unlink_head(h, e);
    shutdown(e->fd, SHUT_RDWR);
    h->unsaid++;
}

/* At most one event a second, however many were cut (an attack cuts many). */
static void say(struct gw_heads *h, uint64_t now)
{
    if (h->unsaid == 0 || now - h->said_ns < 1000000000u)
        return;
    struct gw_buf f;
    gw_buf_init(&f);
    gw_log_u64(&f, "closed", h->unsaid);
    gw_log_u64(&f, "header_timeout_total", atomic_load(&h->metrics->cut_head_timeout));
    gw_log_u64(&f, "evicted_total", atomic_load(&h->metrics->cut_evicted));
    gw_log_event("connections_cut", &f);
    h->unsaid = 0;
    h->said_ns = now;
}

static struct timespec at_ns(uint64_t ns)
{
    /* gw_now_ns is CLOCK_MONOTONIC, the condition variable's clock (gw_heads_start) */
    return (struct timespec){(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
}

static void *reaper(void *arg)
{
    struct gw_heads *h = arg;
    pthread_mutex_lock(&h->lock);
    while (!h->stop) {
        uint64_t now = gw_now_ns();
        while (h->first && now - h->first->since >= h->timeout_ns) {
            cut(h, h->first);
            atomic_fetch_add(&h->metrics->cut_head_timeout, 1);
        }
        say(h, now);
        uint64_t next = h->first ? h->first->since + h->timeout_ns : now + 1000000000u;
        if (next > now + 1000000000u)
            next = now + 1000000000u; /* an event still unsaid is said within a second */
        struct timespec ts = at_ns(next);
        pthread_cond_timedwait(&h->wake, &h->lock, &ts);
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

int gw_heads_start(struct gw_heads *h, unsigned timeout_s, struct gw_metrics *metrics)
{
    pthread_condattr_t attr;
    h->first = h->last = NULL;
    h->stop = h->started = 0;
    h->timeout_ns = (uint64_t)timeout_s * 1000000000u;
    h->said_ns = h->unsaid = 0;
    h->metrics = metrics;
    pthread_mutex_init(&h->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&h->wake, &attr);
    pthread_condattr_destroy(&attr);
    int rc = pthread_create(&h->thread, NULL, reaper, h);
    h->started = rc == 0;
    return -rc;
}

void gw_heads_stop(struct gw_heads *h)
{
    if (!h->started)
        return;
    pthread_mutex_lock(&h->lock);
    h->stop = 1;
    pthread_cond_signal(&h->wake);
    pthread_mutex_unlock(&h->lock);
    pthread_join(h->thread, NULL);
    h->started = 0;
}

void gw_heads_opened(struct gw_heads *h, struct MHD_Connection *conn, void **socket_context)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct gw_head *e = info ? calloc(1, sizeof(*e)) : NULL;
    *socket_context = e;
    if (!e)
        return; /* out of memory: this one has the idle --timeout only */
    e->fd = info->connect_fd;
    pthread_mutex_lock(&h->lock);
    start_waiting(h, e, gw_now_ns());
    pthread_mutex_unlock(&h->lock);
}

void gw_heads_closed(struct gw_heads *h, void **socket_context)
{
    struct gw_head *e = *socket_context;
    if (!e)
        return;
    pthread_mutex_lock(&h->lock);
    unlink_head(h, e);
    pthread_mutex_unlock(&h->lock);
    free(e);
    *socket_context = NULL;
}

static struct gw_head *head_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

void gw_heads_request_began(struct gw_heads *h, struct MHD_Connection *conn)
{
    struct gw_head *e = head_of(conn);
    if (!e)
        return;
    pthread_mutex_lock(&h->lock);
    unlink_head(h, e);
    pthread_mutex_unlock(&h->lock);
}

void gw_heads_request_ended(struct gw_heads *h, struct MHD_Connection *conn)
{
    struct gw_head *e = head_of(conn);
    if (!e)
        return;
    pthread_mutex_lock(&h->lock);
    if (!e->waiting) /* one answered by libmicrohttpd alone never began: its clock runs on */
        start_waiting(h, e, gw_now_ns());
    pthread_mutex_unlock(&h->lock);
}

int gw_heads_evict_oldest(struct gw_heads *h)
{
    pthread_mutex_lock(&h->lock);
    struct gw_head *e = h->first;
    if (e) {
        cut(h, e);
        atomic_fetch_add(&h->metrics->cut_evicted, 1);
        pthread_cond_signal(&h->wake); /* to say it */
    }
    pthread_mutex_unlock(&h->lock);
    return e != NULL;
}
