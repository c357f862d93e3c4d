/* The request-head deadline of `serve`, and room for a new connection when every slot is taken. */
/* A connection must send a complete request head within HC_HEAD_TIMEOUT_S of opening, or of its
 * previous request's end, or it is shut down however slowly it trickles; past HC_HEADS_MAX open
 * connections, the one waiting longest for a head is shut down (docs/operations.md §1.4). The
 * idle timeout of libmicrohttpd restarts at every byte, so it alone let 64 trickling clients
 * hold every slot and block /livez. */
#ifndef HC_HEADS_H
#define HC_HEADS_H

#include <pthread.h>
#include <stdint.h>

#include <microhttpd.h>

#define HC_HEAD_TIMEOUT_S 5
#define HC_HEADS_MAX 64   /* open connections before the longest waiting is shut down */
#define HC_HEADS_SPARE 16 /* libmicrohttpd's own limit is HC_HEADS_MAX + this */

struct hc_head {
    int fd;
    double since;
    int waiting;
    struct hc_head *prev, *next;
};

struct hc_heads {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    int started, stop;
    unsigned open;                /* connections between STARTED and CLOSED */
    struct hc_head *first, *last; /* waiting for a head, oldest first */
};

/* 0, or -errno when the thread cannot start. */
int hc_heads_start(struct hc_heads *h);
void hc_heads_stop(struct hc_heads *h);
/* MHD_OPTION_NOTIFY_CONNECTION (cls: the hc_heads). */
void hc_heads_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                     enum MHD_ConnectionNotificationCode code);
/* A request's head is complete (its first access call); its request ended. */
void hc_heads_began(struct hc_heads *h, struct MHD_Connection *conn);
void hc_heads_ended(struct hc_heads *h, struct MHD_Connection *conn);

#endif
