/* sd_notify for `shardgate serve`: READY, STOPPING, and a watchdog that proves HTTP answers. */
#include "notify.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

/* 1 when GET /livez on the gateway's own address answers 200 within `timeout_ms`. */
static int livez_answers(const struct gw_notify *n, int timeout_ms)
{
    int fd = socket(n->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    static const char req[] = "GET /livez HTTP/1.1\r\nHost: self\r\nConnection: close\r\n\r\n";
    char buf[64] = "";
    struct pollfd p = {fd, POLLIN, 0};
    int ok = connect(fd, (const struct sockaddr *)&n->addr, n->addr_len) == 0 &&
             write(fd, req, sizeof(req) - 1) == (ssize_t)(sizeof(req) - 1) &&
             poll(&p, 1, timeout_ms) == 1 && read(fd, buf, sizeof(buf) - 1) > 12 &&
             strncmp(buf, "HTTP/1.1 200", 12) == 0;
    close(fd);
    return ok;
}

static void sleep_us_unless_stopped(struct gw_notify *n, uint64_t us)
{
    for (uint64_t slept = 0; slept < us && !atomic_load(&n->stop); slept += 50000) {
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
}

static void *watchdog_loop(void *arg)
{
    struct gw_notify *n = arg;
    while (!atomic_load(&n->stop)) {
        if (livez_answers(n, (int)(n->interval_us / 2000)))
            sd_notify(0, "WATCHDOG=1");
        sleep_us_unless_stopped(n, n->interval_us);
    }
    return NULL;
}

int gw_notify_ready(struct gw_notify *n, const struct sockaddr *addr, socklen_t addr_len)
{
    memset(n, 0, sizeof(*n));
    if (addr_len > sizeof(n->addr))
        return -EINVAL;
    memcpy(&n->addr, addr, addr_len);
    n->addr_len = addr_len;
    sd_notify(0, "READY=1\nSTATUS=serving");
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
        return 0;
    n->interval_us = usec / 2;
    int rc = pthread_create(&n->thread, NULL, watchdog_loop, n);
    if (rc != 0)
        return -rc;
    n->started = 1;
    return 0;
}

void gw_notify_stopping(struct gw_notify *n)
{
    sd_notify(0, "STOPPING=1");
    atomic_store(&n->stop, 1);
    if (n->started)
        pthread_join(n->thread, NULL);
    n->started = 0;
}
