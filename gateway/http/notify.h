/* The service manager's notification protocol (sd_notify): READY, STOPPING and a watchdog that
 * pings only while the gateway really answers HTTP (docs/operations.md §6.3). */
#ifndef SHARDGATE_GW_NOTIFY_H
#define SHARDGATE_GW_NOTIFY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

struct gw_notify {
    struct sockaddr_storage addr; /* the gateway's own bound address, probed by the watchdog */
    socklen_t addr_len;
    uint64_t interval_us; /* half of WATCHDOG_USEC; 0 when no watchdog is asked for */
    pthread_t thread;
    int started;
    atomic_int stop;
};

/* Says READY=1 (with the bound address as STATUS) and, when the manager asks for a watchdog,
 * starts the thread that sends WATCHDOG=1 each half interval after a GET /livez on `addr`
 * answered 200. Without NOTIFY_SOCKET it does nothing. Returns 0 or a negative errno code
 * (the thread could not start). */
int gw_notify_ready(struct gw_notify *n, const struct sockaddr *addr, socklen_t addr_len);

/* Says STOPPING=1 and stops the watchdog thread. */
void gw_notify_stopping(struct gw_notify *n);

#endif
