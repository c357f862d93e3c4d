/* The listening socket and the thread that accepts on it (docs/api.md §13). The gateway
 * accepts connections itself and hands each to libmicrohttpd, so that a drain stops accepting
 * by closing its own socket: libmicrohttpd 0.9.75's MHD_quiesce_daemon races its epoll
 * workers for the listening socket and can abort the process (docs/decisions.md §19). */
#ifndef SHARDGATE_GW_LISTENER_H
#define SHARDGATE_GW_LISTENER_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "error.h"
#include "buf.h"
#include "heads.h"

struct gw_listener {
    int fd;
    int open;                  /* 1 from gw_listener_open to gw_listener_close */
    struct MHD_Daemon *daemon; /* where accepted connections go */
    pthread_t thread;
    int started;
    atomic_int stop;
    unsigned max_open;      /* --max-connections: open at once, every worker thread together */
    atomic_uint open_now;   /* handed to the daemon and not yet closed by it */
    struct gw_heads *heads; /* when full, the connection waiting longest for a head makes room */
};

/* Binds `addr` and writes the bound address back into it (the port the kernel picked for port
 * 0); it does not listen yet: until gw_listener_start a client's connection is refused, never
 * left waiting in a backlog while the state is opened. Returns 0, or a negative errno code with
 * "<what>: <strerror>" in err. */
int gw_listener_open(struct gw_listener *l, struct sockaddr_storage *addr, struct gw_error *err);

/* Listens, and starts the thread that accepts connections and adds them to `daemon`, at most
 * `max_open` open at once: when they are, the one that has waited longest for a request head
 * is shut down to make room (heads.h), and with none waiting a new connection is closed at
 * accept (docs/api.md §1). 0 or a negative errno code. */
int gw_listener_start(struct gw_listener *l, struct MHD_Daemon *daemon, unsigned max_open,
                      struct gw_heads *heads);

/* The daemon closed a connection this listener handed it (MHD_CONNECTION_NOTIFY_CLOSED). */
void gw_listener_closed(struct gw_listener *l);

/* Appends the gauge shardgate_connections_open: the connections counted against
 * --max-connections now (one over for a moment while an evicted one closes, docs/api.md §8). */
void gw_listener_metrics_render(struct gw_buf *out, const struct gw_listener *l);

/* Stops accepting: new connections are refused from then on. Joins the thread and closes the
 * socket; safe on a listener never opened or started. */
void gw_listener_close(struct gw_listener *l);

#endif
