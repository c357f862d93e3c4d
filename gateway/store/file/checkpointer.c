/* The checkpoint thread: index first, checkpoint second (index_seq >= last_seq always). */
#include "checkpointer.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "timing.h"

static void log_written(const struct gw_checkpoint_snapshot *s, const char *dir)
{
    char name[GW_CHECKPOINT_NAME_MAX], path[4096];
    struct gw_buf f;
    gw_checkpoint_name(name, s->last_seq);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    gw_buf_init(&f);
    gw_log_str(&f, "file", path);
    gw_log_u64(&f, "last_seq", s->last_seq);
    gw_log_u64(&f, "segment", s->segment);
    gw_log_u64(&f, "offset", s->offset);
    gw_log_event("checkpoint_written", &f);
}

static void log_failed(const struct gw_error *err)
{
    struct gw_buf f;
    gw_buf_init(&f);
    gw_log_str(&f, "error", err->msg);
    gw_log_event("checkpoint_failed", &f);
}

/* One snapshot: the index durable through its last seq, then the checkpoint file. */
static void write_one(struct gw_checkpointer *c, const struct gw_checkpoint_snapshot *s)
{
    struct gw_error err;
    int rc = gw_idem_persist(c->idem, s->last_seq, &err);
    if (rc == 0)
        rc = gw_checkpoint_write(c->journal->dir, s, s->last_seq, &err);
    if (rc == 0)
        log_written(s, c->journal->dir);
    else
        log_failed(&err);
}

static void *checkpointer_main(void *arg)
{
    struct gw_checkpointer *c = arg;
    pthread_mutex_lock(&c->worker.lock);
    for (;;) {
        while (!c->has_pending && !c->worker.stopping)
            gw_worker_wait_until(&c->worker, 0);
        if (!c->has_pending)
            break;
        struct gw_checkpoint_snapshot s = c->pending;
        c->has_pending = 0;
        c->busy = 1;
        pthread_mutex_unlock(&c->worker.lock);
        write_one(c, &s);
        gw_checkpoint_snapshot_free(&s);
        pthread_mutex_lock(&c->worker.lock);
        c->busy = 0;
    }
    pthread_mutex_unlock(&c->worker.lock);
    return NULL;
}

int gw_checkpointer_start(struct gw_checkpointer *c, struct gw_journal *j, struct gw_ledger *l,
                          struct gw_idem *idem, uint64_t interval_ms, uint64_t taken_seq,
                          struct gw_error *err)
{
    memset(c, 0, sizeof(*c));
    c->journal = j;
    c->ledger = l;
    c->idem = idem;
    c->interval_ms = interval_ms;
    c->taken_seq = taken_seq;
    c->taken_ns = gw_now_ns();
    c->taken_size = j->size;
    c->bytes_every = j->segment_bytes / 4;
    if (c->bytes_every == 0)
        c->bytes_every = UINT64_MAX / 2; /* a journal without a segment size: by time alone */
    return gw_worker_start(&c->worker, checkpointer_main, c,
                           "checkpoint: cannot start the checkpoint thread", err);
}

uint64_t gw_checkpointer_due_ms(struct gw_checkpointer *c)
{
    uint64_t since = (gw_now_ns() - c->taken_ns) / 1000000;
    return since >= c->interval_ms ? 1 : c->interval_ms - since;
}

void gw_checkpointer_offer(struct gw_checkpointer *c, int force)
{
    if (!c || !c->worker.started)
        return;
    if (!force && (gw_now_ns() - c->taken_ns) / 1000000 < c->interval_ms &&
        c->journal->size < c->taken_size + c->bytes_every)
        return; /* neither the interval nor a quarter segment since the last (docs/journal.md §7) */
    if (force < 2 && c->journal->last_seq == c->taken_seq) {
        c->taken_ns = gw_now_ns(); /* nothing new: the next interval starts now */
        return;
    }
    struct gw_checkpoint_snapshot s;
    if (gw_checkpoint_take(c->journal, c->ledger, &s) != 0) {
        gw_checkpoint_snapshot_free(&s);
        return; /* out of memory: the next offer tries again */
    }
    c->taken_seq = s.last_seq;
    c->taken_ns = gw_now_ns();
    c->taken_size = c->journal->size;
    pthread_mutex_lock(&c->worker.lock);
    if (c->has_pending)
        gw_checkpoint_snapshot_free(&c->pending);
    c->pending = s;
    c->has_pending = 1;
    gw_worker_wake(&c->worker);
    pthread_mutex_unlock(&c->worker.lock);
}

void gw_checkpointer_stop(struct gw_checkpointer *c)
{
    gw_worker_destroy(&c->worker);
}
