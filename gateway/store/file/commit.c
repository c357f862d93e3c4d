/* The journal writer thread: take every queued receipt, write them as one, sync once. */
#include "commit.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "line_check.h"
#include "timing.h"

/* An epoch record in the group: it follows the group's receipts so far. */
static void add_epoch(struct gw_committer *c, struct gw_commit_item *it, uint64_t receipts)
{
    const struct gw_topology *t = it->epoch_of;
    struct gw_buf *own = &c->group.own;
    c->epoch_at = own->len;
    gw_journal_epoch_entry(c->journal, t, it->source, receipts, &it->entry);
    gw_records_epoch_line(own, &t->contract, &t->members, &it->entry);
    gw_record_end(own, c->epoch_at);
    c->epoch_len = own->len - c->epoch_at;
}

/* Lays the group's records out in c->group, each receipt where its request wrote it; each
 * learns its seq and offset. Returns the number of receipts, or -ENOMEM. */
static long build_group(struct gw_committer *c, struct gw_commit_item *list)
{
    uint64_t seq = c->journal->last_seq;
    struct gw_buf *own = &c->group.own;
    gw_gather_reset(&c->group);
    c->epoch_len = 0;
    for (struct gw_commit_item *it = list; it; it = it->next) {
        if (it->epoch_of) {
            add_epoch(c, it, seq - c->journal->last_seq);
            continue;
        }
        it->seq = ++seq;
        it->segment = c->journal->segment;
        size_t line = own->len;
        gw_records_receipt_prefix(own, it->seq, it->fingerprint);
        it->receipt_offset = c->journal->size + gw_gather_len(&c->group);
        gw_gather_borrow(&c->group, it->receipt, it->receipt_len);
        /* the receipt's CRC came with it: the writer's thread adds only its prefix's */
        gw_record_close_around(own, line, it->receipt_len, it->receipt_crc);
    }
    return c->group.failed || own->failed ? -ENOMEM : (long)(seq - c->journal->last_seq);
}

#ifndef NDEBUG
/* The group's seqs follow the journal's last one by exactly +1 each (docs/decisions.md §9). */
static int seqs_follow(const struct gw_commit_item *list, uint64_t last_seq)
{
    for (const struct gw_commit_item *it = list; it; it = it->next)
        if (!it->epoch_of && it->seq != ++last_seq)
            return 0;
    return 1;
}
#endif

/* The group's epoch records join the chain once durable, in order; each receipt learns the
 * epoch_seq its totals count under: the latest chain entry with its epoch id at its place in
 * the journal, the entry a replay finds for it (docs/journal.md §7). An epoch id may recur
 * (A -> B -> A), and a request dispatched on the first A's view may land after the second. */
static void chain_epochs(struct gw_committer *c, struct gw_commit_item *list)
{
    struct gw_epoch_entry e;
    if (c->epoch_len) /* the epoch record in force, which a rotation repeats (docs/journal.md §6) */
        gw_journal_set_epoch_line(c->journal, c->group.own.data + c->epoch_at, c->epoch_len);
    for (struct gw_commit_item *it = list; it; it = it->next) {
        if (it->epoch_of)
            it->chained = gw_chain_append(&c->journal->chain, &it->entry) == 0;
        else
            it->epoch_seq =
                it->epoch && gw_chain_find(&c->journal->chain, it->epoch, 0, &e) ? e.epoch_seq : 0;
    }
}

/* Rotation (docs/journal.md §6): before a group that would make a segment holding a receipt
 * larger than --segment-bytes. The group is laid out again for the new segment. */
static long rotate_if_due(struct gw_committer *c, struct gw_commit_item *list, long built,
                          int *rotated, struct gw_error *err)
{
    struct gw_journal *j = c->journal;
    if (built < 0 || j->last_seq < j->segment ||
        j->size + gw_gather_len(&c->group) <= j->segment_bytes)
        return built;
    int rc = gw_journal_rotate(j, err);
    if (rc != 0)
        return rc;
    *rotated = 1;
    return build_group(c, list);
}

/* What the group's records concern, for the feed's watchers. */
static uint64_t shard_bits_of(const struct gw_commit_item *list)
{
    uint64_t bits = 0;
    for (const struct gw_commit_item *it = list; it; it = it->next)
        bits |= it->epoch_of ? UINT64_MAX : it->shard_bits;
    return bits;
}

static int commit_group(struct gw_committer *c, struct gw_commit_item *list, int *rotated)
{
    struct gw_error err;
    uint64_t sync_ns = 0;
    long built = rotate_if_due(c, list, build_group(c, list), rotated, &err);
    int rc = built < 0 ? (int)built : 0;
    uint64_t n = built < 0 ? 0 : (uint64_t)built;
    int pieces = 0;
    const struct iovec *iov = rc == 0 ? gw_gather_iov(&c->group, &pieces) : NULL;
    if (rc == 0 && !iov)
        rc = -ENOMEM;
    if (rc == -ENOMEM)
        gw_error_set(&err, "", "journal: out of memory");
    else if (rc == 0)
        rc = gw_journal_appendv(c->journal, iov, pieces, &sync_ns, &err);
    if (rc == 0) {
        assert(seqs_follow(list, c->journal->last_seq));
        c->journal->last_seq += n;
        gw_metrics_commit(c->metrics, n, sync_ns);
        chain_epochs(c, list);
        if (c->hook.durable)
            c->hook.durable(c->hook.ctx, c->journal->last_seq, shard_bits_of(list));
    } else if (rc != -ENOMEM) {
        c->error = err;
        atomic_store(&c->failed, 1);
    }
    /* Large groups leave a large buffer behind; give it back. */
    if (c->group.own.cap > (64u << 20))
        gw_gather_free(&c->group);
    return rc;
}

/* Counts the items the writer took; the list ends exactly at the tail it took with it. */
static size_t count_group(const struct gw_commit_item *list, const struct gw_commit_item *tail)
{
    size_t n = 0;
    const struct gw_commit_item *last = NULL;
    for (const struct gw_commit_item *it = list; it; it = it->next, n++)
        last = it;
    assert(last == tail);
    (void)tail;
    (void)last;
    return n;
}

/* Waits for a group, or until a checkpoint interval is due. Returns 1 when woken by the
 * timeout (the lock is held either way). */
static int wait_for_work(struct gw_committer *c)
{
    uint64_t due =
        c->checkpointer ? gw_now_ns() + gw_checkpointer_due_ms(c->checkpointer) * 1000000u : 0;
    return gw_worker_wait_until(&c->worker, due);
}

static void *writer_main(void *arg)
{
    struct gw_committer *c = arg;
    pthread_mutex_lock(&c->worker.lock);
    for (;;) {
        while (!c->head && !c->worker.stopping && !wait_for_work(c))
            ;
        if (!c->head && c->worker.stopping)
            break;
        if (!c->head) { /* the interval passed without a group */
            pthread_mutex_unlock(&c->worker.lock);
            gw_checkpointer_offer(c->checkpointer, 0);
            pthread_mutex_lock(&c->worker.lock);
            continue;
        }
        pthread_mutex_unlock(&c->worker.lock);
        if (c->delay_ms)
            gw_sleep_ms(c->delay_ms);
        pthread_mutex_lock(&c->worker.lock);
        struct gw_commit_item *list = c->head, *tail = c->tail;
        c->head = c->tail = NULL; /* the writer owns head..tail now, nobody else */
        pthread_mutex_unlock(&c->worker.lock);
        count_group(list, tail);
        int rotated = 0;
        int rc = gw_committer_failed(c) ? -EIO : commit_group(c, list, &rotated);
        gw_commit_finish(list,
                         rc); /* the ledger has the group now: a snapshot agrees with the journal */
        if (!gw_committer_failed(c))
            gw_checkpointer_offer(c->checkpointer, rotated ? 2 : 0);
        pthread_mutex_lock(&c->worker.lock);
    }
    pthread_mutex_unlock(&c->worker.lock);
    if (!gw_committer_failed(c)) /* a clean shutdown: after the last group */
        gw_checkpointer_offer(c->checkpointer, 1);
    return NULL;
}

int gw_committer_start(struct gw_committer *c, struct gw_journal *journal,
                       struct gw_metrics *metrics, struct gw_checkpointer *checkpointer,
                       unsigned delay_ms, const struct gw_commit_hook *hook, struct gw_error *err)
{
    memset(c, 0, sizeof(*c));
    if (hook)
        c->hook = *hook;
    c->journal = journal;
    c->checkpointer = checkpointer;
    c->metrics = metrics;
    c->delay_ms = delay_ms;
    atomic_init(&c->failed, 0);
    gw_gather_init(&c->group);
    return gw_worker_start(&c->worker, writer_main, c, "journal: cannot start the writer thread",
                           err);
}

void gw_committer_submit(struct gw_committer *c, struct gw_commit_item *item)
{
    gw_commit_enqueue(&c->worker, &c->head, &c->tail, item);
}

int gw_committer_failed(struct gw_committer *c)
{
    return atomic_load(&c->failed);
}

void gw_committer_stop(struct gw_committer *c)
{
    gw_worker_join(&c->worker);
}

void gw_committer_destroy(struct gw_committer *c)
{
    if (!c->worker.started)
        return;
    gw_worker_destroy(&c->worker);
    gw_gather_free(&c->group);
}
