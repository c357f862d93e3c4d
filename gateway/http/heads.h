/* The request-head deadline and the eviction of waiting connections (docs/api.md §1): a
 * connection must send a complete request head within --header-timeout seconds of its opening,
 * or of the end of its previous request (a keep-alive connection waiting for its next one);
 * otherwise it is shut down, however slowly it trickles bytes. When every connection slot is
 * taken, the connection that has waited longest for a head is shut down to make room for a new
 * one. libmicrohttpd 0.9.75's --timeout restarts at every byte, so a client sending one header
 * byte every few seconds held its connection for ever (docs/decisions.md §45). */
#ifndef SHARDGATE_GW_HEADS_H
#define SHARDGATE_GW_HEADS_H

#include <pthread.h>
#include <stdint.h>

#include <microhttpd.h>

#include "metrics.h"

/* One connection's place: waiting for a head (on the list, `since` set) or in a request. */
struct gw_head {
    int fd;         /* the connection's socket: shut down, never closed, from here */
    uint64_t since; /* gw_now_ns() when it began waiting */
    int waiting;    /* 1 while on the list */
    struct gw_head *prev, *next;
};

struct gw_heads {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    int started, stop;
    uint64_t timeout_ns;
    struct gw_head *first, *last; /* waiting, oldest first */
    struct gw_metrics *metrics;   /* counts them: cut_head_timeout, cut_evicted */
    uint64_t said_ns;             /* the last header_timeout event */
    uint64_t unsaid;              /* shut down since it */
};

/* Starts the thread that shuts down the connections past the deadline. 0 or -errno. */
int gw_heads_start(struct gw_heads *h, unsigned timeout_s, struct gw_metrics *metrics);
/* Stops and joins it; safe when never started. */
void gw_heads_stop(struct gw_heads *h);

/* libmicrohttpd's MHD_CONNECTION_NOTIFY_STARTED and _CLOSED of `conn`: *socket_context holds
 * its gw_head. CLOSED comes before libmicrohttpd closes the socket, and the shutdowns hold the
 * same lock, so a shutdown never reaches a descriptor reused by another connection. */
void gw_heads_opened(struct gw_heads *h, struct MHD_Connection *conn, void **socket_context);
void gw_heads_closed(struct gw_heads *h, void **socket_context);

/* The head of a request on `conn` is complete (its first access call); its request ended
 * (MHD_OPTION_NOTIFY_COMPLETED): it waits for the next head from now. */
void gw_heads_request_began(struct gw_heads *h, struct MHD_Connection *conn);
void gw_heads_request_ended(struct gw_heads *h, struct MHD_Connection *conn);

/* Shuts down the connection that has waited longest for a head, to make room for a new one.
 * 1 when there was one, else 0. */
int gw_heads_evict_oldest(struct gw_heads *h);

#endif
