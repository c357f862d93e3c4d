/* The listening socket and its accept thread (docs/api.md §13). */
#define _GNU_SOURCE /* accept4 */
#include "listener.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "metrics.h"
#include "timing.h"

static socklen_t addr_len(const struct sockaddr_storage *addr)
{
    return addr->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static int fail(struct gw_listener *l, const char *what, struct gw_error *err)
{
    int e = errno;
    gw_error_set(err, "", "%s: %s", what, strerror(e));
    if (l->fd >= 0)
        close(l->fd);
    return -e;
}

int gw_listener_open(struct gw_listener *l, struct sockaddr_storage *addr, struct gw_error *err)
{
    int one = 1;
    socklen_t len = addr_len(addr);
    memset(l, 0, sizeof(*l));
    l->fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (l->fd < 0)
        return fail(l, "socket", err);
    if (setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        (addr->ss_family == AF_INET6 &&
         setsockopt(l->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0))
        return fail(l, "setsockopt", err);
    if (bind(l->fd, (struct sockaddr *)addr, len) != 0)
        return fail(l, "bind", err);
    if (getsockname(l->fd, (struct sockaddr *)addr, &len) != 0)
        return fail(l, "getsockname", err);
    l->open = 1;
    return 0;
}

/* An accept that failed for want of descriptors or memory: said at most once a second, and
 * tried again after 10 ms, so a full descriptor table costs no busy loop. */
static void accept_failed(int e, uint64_t *said_ns)
{
    uint64_t now = gw_now_ns();
    if (now - *said_ns >= 1000000000u) {
        struct gw_buf f;
        gw_buf_init(&f);
        gw_log_str(&f, "error", strerror(e));
        gw_log_event("accept_failed", &f);
        *said_ns = now;
    }
    gw_sleep_ms(10);
}

/* libmicrohttpd splits its connection limit among its worker threads and places an added
 * connection by its descriptor before the worker has counted the ones queued to it, so its
 * limit can refuse a connection while another worker has room (docs/decisions.md §20). The
 * total is therefore counted here, and the daemon's own limit never binds. */
static void hand_over(struct gw_listener *l, int fd, struct sockaddr_storage *peer, socklen_t len)
{
    /* Full: the one waiting longest for a head is shut down and this one takes its place; the
     * count is one over until libmicrohttpd has closed it, a moment later. */
    if (atomic_fetch_add(&l->open_now, 1) >= l->max_open && !gw_heads_evict_oldest(l->heads)) {
        atomic_fetch_sub(&l->open_now, 1);
        close(fd);
        struct gw_buf f;
        gw_buf_init(&f);
        gw_log_u64(&f, "max_connections", l->max_open);
        gw_log_event("connection_refused", &f);
        return;
    }
    if (MHD_add_connection(l->daemon, fd, (struct sockaddr *)peer, len) != MHD_YES)
        atomic_fetch_sub(&l->open_now, 1); /* closed by it: the per-address limit */
}

void gw_listener_closed(struct gw_listener *l)
{
    atomic_fetch_sub(&l->open_now, 1);
}

void gw_listener_metrics_render(struct gw_buf *out, const struct gw_listener *l)
{
    gw_metrics_header(out, "shardgate_connections_open", "gauge",
                      "Connections open now, counted against --max-connections (docs/api.md §1).");
    gw_buf_field_u64(out, "shardgate_connections_open ", atomic_load(&l->open_now));
    gw_buf_puts(out, "\n");
}

static void *accept_loop(void *arg)
{
    struct gw_listener *l = arg;
    uint64_t said_ns = 0;
    while (!atomic_load(&l->stop)) {
        struct sockaddr_storage peer;
        socklen_t len = sizeof(peer);
        int fd = accept4(l->fd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0)
            hand_over(l, fd, &peer, len);
        else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
            accept_failed(errno, &said_ns);
        else if (errno == EINVAL)
            break; /* the socket was shut down: gw_listener_close */
    }
    return NULL;
}

int gw_listener_start(struct gw_listener *l, struct MHD_Daemon *daemon, unsigned max_open,
                      struct gw_heads *heads)
{
    l->daemon = daemon;
    l->heads = heads;
    l->max_open = max_open;
    if (listen(l->fd, SOMAXCONN) != 0)
        return -errno;
    int rc = pthread_create(&l->thread, NULL, accept_loop, l);
    l->started = rc == 0;
    return -rc;
}

void gw_listener_close(struct gw_listener *l)
{
    if (!l->open)
        return;
    atomic_store(&l->stop, 1);
    shutdown(l->fd, SHUT_RDWR); /* a blocked accept returns EINVAL */
    if (l->started)
        pthread_join(l->thread, NULL);
    l->started = 0;
    close(l->fd);
    l->open = 0;
}
