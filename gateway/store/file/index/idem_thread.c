/* The background thread of the idempotency index: keeps a spare table ready, writes frozen
 * tables as runs and merges runs, all off the request path (docs/decisions.md §15). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "idem_state.h"
#include "idempotency.h"
#include "log.h"

static void log_failure(const struct gw_error *err)
{
    struct gw_buf f;
    gw_buf_init(&f);
    gw_log_str(&f, "error", err->msg);
    gw_log_event("index_maintenance_failed", &f);
}

int gw_idem_maintain(struct gw_idem *t, struct gw_error *err)
{
    struct gw_idem_state *s = t->s;
    pthread_mutex_lock(&s->lock);
    size_t frozen = s->nfrozen;
    pthread_mutex_unlock(&s->lock);
    int rc = 0;
    if (frozen) {
        pthread_mutex_lock(&s->io_lock);
        rc = gw_idem__flush(s, s->durable_seq, err); /* no seq claimed: durable_seq unchanged */
        pthread_mutex_unlock(&s->io_lock);
    }
    while (rc == 0 && (rc = gw_idem__merge_once(s, err)) == 1)
        rc = 0;
    return rc < 0 ? rc : 0;
}

/* Allocates a spare table when there is none (outside the lock). */
static void refill_spare(struct gw_idem_state *s)
{
    pthread_mutex_lock(&s->lock);
    int need = !s->spare.slots;
    pthread_mutex_unlock(&s->lock);
    struct gw_idem_table fresh;
    if (!need || gw_idem_table_init(&fresh, s->tune.table_slots) != 0)
        return;
    pthread_mutex_lock(&s->lock);
    if (!s->spare.slots) {
        s->spare = fresh;
        fresh.slots = NULL;
    }
    pthread_mutex_unlock(&s->lock);
    gw_idem_table_free(&fresh);
}

static void *run_thread(void *arg)
{
    struct gw_idem_state *s = arg;
    struct gw_idem t = {s};
    pthread_mutex_lock(&s->lock);
    while (!s->stop) {
        pthread_mutex_unlock(&s->lock);
        refill_spare(s);
        struct gw_error err;
        int failed = gw_idem_maintain(&t, &err) != 0;
        if (failed)
            log_failure(&err);
        pthread_mutex_lock(&s->lock);
        if (s->stop || (!failed && (s->nfrozen || !s->spare.slots)))
            continue;
        struct timespec deadline; /* a bounded wait: merges are also retried each second */
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += 1;
        pthread_cond_timedwait(&s->wake, &s->lock, &deadline);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

int gw_idem__thread_start(struct gw_idem_state *s)
{
    if (pthread_create(&s->thread, NULL, run_thread, s) != 0)
        return -EAGAIN;
    s->thread_started = 1;
    return 0;
}

void gw_idem__thread_stop(struct gw_idem_state *s)
{
    if (!s->thread_started)
        return;
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    s->thread_started = 0;
}
