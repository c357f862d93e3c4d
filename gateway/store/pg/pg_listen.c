/* The listener of --store postgres (docs/journal.md §10), on its own connection. LISTEN
 * shardgate_epochs: every notification, and every (re)connect, runs the server's catch-up, so a
 * change made through any replica is applied by all within a second and none is missed while
 * the connection was down. LISTEN shardgate_receipts: other replicas' commits wake the feed's
 * watchers here. */
#include "pg_store.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "timing.h"

#define LISTEN_TICK_MS 1000 /* how often a lost connection is retried and a stop is seen */

/* Connects and LISTENs; the catch-up after it reads what came while it was away. */
static int connect_and_listen(struct gw_pg_store *s)
{
    struct gw_error err;
    if (gw_pg_ensure(&s->listener, &err) != 0 ||
        gw_pg_run(&s->listener, "LISTEN shardgate_epochs; LISTEN shardgate_receipts", &err) != 0)
        return -ENOTCONN;
    s->changed(s->changed_ctx, &s->listener);
    return 0;
}

/* Another replica's commit, "<last_seq> <shard_bits>": the feed's watchers learn of it. */
static void announce(struct gw_pg_store *s, const char *payload)
{
    unsigned long long seq = 0, bits = 0;
    if (s->hook.durable && sscanf(payload, "%llu %llu", &seq, &bits) == 2)
        s->hook.durable(s->hook.ctx, seq, bits);
}

/* Waits up to a tick for notifications; returns 1 when one or more came. A broken connection
 * is closed (the next round reconnects). */
static int wait_notified(struct gw_pg_store *s)
{
    PGconn *conn = s->listener.conn;
    struct pollfd p = {.fd = PQsocket(conn), .events = POLLIN};
    if (poll(&p, 1, LISTEN_TICK_MS) <= 0)
        return 0;
    if (!PQconsumeInput(conn)) {
        gw_pg_close(&s->listener);
        return 0;
    }
    int notified = 0;
    PGnotify *n;
    while ((n = PQnotifies(conn)) != NULL) {
        if (strcmp(n->relname, "shardgate_receipts") == 0)
            announce(s, n->extra);
        else
            notified = 1;
        PQfreemem(n);
    }
    return notified;
}

static void *listen_main(void *arg)
{
    struct gw_pg_store *s = arg;
    while (!atomic_load(&s->listen_stop)) {
        if (!s->listener.conn || PQstatus(s->listener.conn) != CONNECTION_OK) {
            if (connect_and_listen(s) != 0)
                gw_sleep_ms(LISTEN_TICK_MS);
            continue;
        }
        if (wait_notified(s))
            s->changed(s->changed_ctx, &s->listener);
    }
    return NULL;
}

int gw_pg_listener_start(struct gw_pg_store *s, gw_pg_changed_fn changed, void *ctx,
                         struct gw_error *err)
{
    s->changed = changed;
    s->changed_ctx = ctx;
    atomic_store(&s->listen_stop, 0);
    int rc = pthread_create(&s->listen_thread, NULL, listen_main, s);
    if (rc != 0) {
        gw_error_set(err, "", "store listener: %s", strerror(rc));
        return -rc;
    }
    s->listening = 1;
    return 0;
}

void gw_pg_listener_stop(struct gw_pg_store *s)
{
    if (!s->listening)
        return;
    atomic_store(&s->listen_stop, 1);
    pthread_join(s->listen_thread, NULL);
    s->listening = 0;
}
