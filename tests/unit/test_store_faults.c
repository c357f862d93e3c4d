/* Faults injected in-process under the state dir's store (gateway/core/io.h): a receipt is
 * committed through the store's face (store.h) with EIO, ENOSPC or a "crash" at each system
 * call of its commit. Whatever the fault: every receipt acknowledged before it reads back byte
 * for byte after a restart, the faulted one is answered as failed and cut back (a crash may leave
 * it whole; acknowledged, it reads back too), a failed writer takes no more commits, and no read
 * meets a damaged line (docs/journal.md §4). Runs as `test_store_faults SOURCE_DIR`. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "archive.h"
#include "check.h"
#include "dispatch.h"
#include "exit.h"
#include "fileio.h"
#include "idempotency.h"
#include "faulty_io.h"
#include "io.h"
#include "receipt.h"
#include "store.h"
#include "store_file.h" /* the writer threads the faults are aimed at */
#include "view.h"

enum fault { FAULT_EIO, FAULT_ENOSPC, FAULT_CRASH };

/* fault, at and writer are set while disarmed; the store's threads read them only once
 * armed. Only the calls of the thread under test are counted (the checkpointer a rotation wakes
 * runs beside the journal writer); once a crash is reached, every thread's calls fail. */
static struct {
    enum fault fault;
    int at, calls, hit, armed;
    int hit_write;    /* the fault's call writes (an open that only reads is 0) */
    pthread_t writer; /* the thread whose calls are counted */
} inj;

/* Whether this call fails (faulty_io.h). */
static int fault_here(int writes)
{
    if (!__atomic_load_n(&inj.armed, __ATOMIC_SEQ_CST))
        return 0;
    int crashed = inj.fault == FAULT_CRASH && __atomic_load_n(&inj.hit, __ATOMIC_SEQ_CST);
    pthread_t self = pthread_self();
    if (!crashed && !pthread_equal(self, inj.writer))
        return 0;
    int n = crashed ? inj.at : __atomic_add_fetch(&inj.calls, 1, __ATOMIC_SEQ_CST);
    int now = crashed || n == inj.at;
    if (now && !crashed)
        __atomic_store_n(&inj.hit_write, writes, __ATOMIC_SEQ_CST);
    if (now) {
        __atomic_store_n(&inj.hit, 1, __ATOMIC_SEQ_CST);
        errno = inj.fault == FAULT_ENOSPC ? ENOSPC : EIO;
    }
    return now;
}

static size_t fault_write_len(size_t len)
{
    return len;
}

static const char *source;
static char conf[4096], shards[4096];

/* One open store and the view its commits use. */
struct open_store {
    struct gw_store *store;
    struct gw_store_options o;
    struct gw_metrics metrics;
    struct gw_view_slot views;
    struct gw_view *view;
};

static int open_store(struct open_store *s, const char *dir, uint64_t segment_bytes)
{
    struct gw_error err;
    struct gw_topology topo;
    memset(s, 0, sizeof(*s));
    s->o = (struct gw_store_options){.state_dir = dir,
                                     .segment_bytes = segment_bytes,
                                     .checkpoint_interval_ms = 3600000,
                                     .max_watchers = 4};
    gw_metrics_init(&s->metrics);
    gw_view_slot_init(&s->views);
    if (gw_store_new(&s->store) != 0 || gw_exit_load_topology(conf, shards, &topo) != 0)
        return -1;
    int rc = gw_store_open(s->store, &s->o, &topo, &s->metrics, &err);
    struct gw_epoch_entry latest;
    if (rc == 0 && gw_chain_latest(gw_store_chain(s->store), &latest))
        rc = gw_view_new(&s->views, &topo, latest.epoch_seq, gw_store_ledger(s->store), &s->view,
                         &err);
    if (rc == 0)
        rc = gw_store_start(s->store, &s->o, &s->metrics, &err);
    if (rc != 0)
        fprintf(stderr, "open_store: %d %s\n", rc, err.msg);
    return rc;
}

static void close_store(struct open_store *s)
{
    gw_store_stop(s->store);
    if (s->view)
        gw_view_unref(s->view);
    gw_store_close(s->store);
    gw_view_slot_free(&s->views);
}

/* One batch's commit, waited for. */
struct commit {
    struct gw_commit_item item;
    struct gw_event done;
};

static void committed(struct gw_commit_item *item, int rc)
{
    gw_event_set(&((struct commit *)item)->done, rc);
}

/* Commits batch `id` of one change; its receipt bytes into `receipt`. Returns the commit's rc,
 * or -EEXIST when the claim did not say new. */
static int commit(struct open_store *s, const char *id, struct gw_buf *receipt)
{
    char doc[256];
    struct gw_batch b;
    struct gw_dispatch d;
    struct gw_error err;
    enum gw_commit_verdict verdict;
    struct gw_store_miss miss;
    snprintf(doc, sizeof(doc),
             "{\"batch_id\":\"%s\",\"changes\":[{\"id\":\"c\",\"key\":\"%s\","
             "\"size\":3}]}",
             id, id);
    if (gw_batch_parse(doc, strlen(doc), 10, &b, &err) != 0)
        return -EINVAL;
    int rc = gw_store_claim(s->store, b.batch_id, b.batch_id_len, b.fingerprint, &verdict, receipt,
                            &miss);
    if (rc == 0 && verdict != GW_COMMIT_NEW)
        rc = -EEXIST;
    if (rc == 0 && (rc = gw_dispatch_run(&s->view->topo, &b, &d, &err)) == 0) {
        gw_receipt_write(receipt, &s->view->topo, &b, &d);
        struct commit c = {.item = {.receipt = receipt->data,
                                    .receipt_len = receipt->len,
                                    .fingerprint = b.fingerprint,
                                    .batch_id = id,
                                    .epoch = s->view->topo.epoch,
                                    .members = &s->view->topo.members,
                                    .tally = d.tally,
                                    .stored = receipt,
                                    .view_epoch_seq = s->view->epoch_seq,
                                    .slots = s->view->slots,
                                    .done = committed}};
        gw_event_init(&c.done);
        gw_store_submit(s->store, &c.item);
        rc = gw_event_wait(&c.done);
        gw_event_destroy(&c.done);
        gw_dispatch_free(&d);
    }
    gw_batch_free(&b);
    return rc;
}

/* What reading batch `id` back gives: 1 its exact bytes, 2 archived, 0 no receipt, -1 anything
 * else (a damaged line, another error). */
static int reads_back(struct open_store *s, const char *id, const struct gw_buf *want)
{
    struct gw_buf got;
    struct gw_store_miss miss;
    gw_buf_init(&got);
    int rc = gw_store_read_receipt(s->store, id, strlen(id), &got, &miss);
    int same = rc == 0 && got.len == want->len && memcmp(got.data, want->data, got.len) == 0;
    gw_buf_free(&got);
    return same ? 1 : rc == -ESTALE ? 2 : rc == -ENOENT ? 0 : -1;
}

static const char *fault_name(enum fault f)
{
    return f == FAULT_EIO ? "EIO" : f == FAULT_ENOSPC ? "ENOSPC" : "crash";
}

/* Three receipts acknowledged, then a fourth with the fault at its commit's call `at`, then a
 * restart. Returns 1 when the fourth commit made `at` calls or more. */
static int commit_at(enum fault fault, int at, uint64_t segment_bytes)
{
    char dir[] = "/tmp/shardgate-store-faults-XXXXXX", cmd[4200];
    struct gw_buf r[4];
    const char *ids[4] = {"b-1", "b-2", "b-3", "b-4"};
    struct open_store s;
    if (!mkdtemp(dir))
        return 0;
    for (int i = 0; i < 4; i++)
        gw_buf_init(&r[i]);
    /* Set while no thread of the store runs; it passes every call through until armed. */
    gw_io = faulty_io;
    inj.fault = fault;
    inj.at = at;
    inj.calls = inj.hit = 0;
    CHECK_EQ_U64(open_store(&s, dir, segment_bytes), 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_U64(commit(&s, ids[i], &r[i]), 0);
    inj.writer = gw_fs(s.store)->committer.worker.thread;
    __atomic_store_n(&inj.armed, 1, __ATOMIC_SEQ_CST);
    int rc = commit(&s, ids[3], &r[3]);
    int calls = __atomic_load_n(&inj.calls, __ATOMIC_SEQ_CST);
    if (fault != FAULT_CRASH)
        __atomic_store_n(&inj.armed, 0, __ATOMIC_SEQ_CST);
    int hit = __atomic_load_n(&inj.hit, __ATOMIC_SEQ_CST);
    if (!hit)
        CHECK_EQ_U64(rc, 0);
    else /* the fault is at the write or the sync: nothing is acknowledged */
        CHECK_REPORT(rc != 0, "%s at call %d: b-4 acknowledged", fault_name(fault), at);
    if (rc != 0) { /* a failed writer takes nothing more */
        CHECK_REPORT(!gw_store_writable(s.store), "%s at call %d: still writable",
                     fault_name(fault), at);
        struct gw_buf extra;
        gw_buf_init(&extra);
        CHECK_REPORT(commit(&s, "b-5", &extra) != 0, "%s at call %d: b-5 committed",
                     fault_name(fault), at);
        gw_buf_free(&extra);
    }
    close_store(&s); /* under a crash every call of the shutdown fails too */
    __atomic_store_n(&inj.armed, 0, __ATOMIC_SEQ_CST);
    gw_io = gw_io_libc;
    CHECK_EQ_U64(open_store(&s, dir, segment_bytes), 0);
    for (int i = 0; i < 3; i++)
        CHECK_REPORT(reads_back(&s, ids[i], &r[i]) == 1, "%s at call %d: %s lost",
                     fault_name(fault), at, ids[i]);
    int fourth = reads_back(&s, ids[3], &r[3]);
    /* A failed append is cut back to the last durable line; a crash may leave it whole. */
    int want_ok = rc == 0 ? fourth == 1 : fault == FAULT_CRASH ? fourth >= 0 : fourth == 0;
    CHECK_REPORT(want_ok, "%s at call %d: b-4 rc %d, read %d", fault_name(fault), at, rc, fourth);
    close_store(&s);
    for (int i = 0; i < 4; i++)
        gw_buf_free(&r[i]);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
    return calls >= at;
}

/* 1 when `dir` or its index/ holds a temporary file ("*.tmp*"). */
static int temp_left(const char *dir)
{
    char sub[4200];
    const char *dirs[2] = {dir, sub};
    snprintf(sub, sizeof(sub), "%s/index", dir);
    for (int k = 0; k < 2; k++) {
        DIR *d = opendir(dirs[k]);
        struct dirent *e;
        int found = 0;
        while (d && (e = readdir(d)))
            found |= strstr(e->d_name, ".tmp") != NULL;
        if (d)
            closedir(d);
        if (found)
            return 1;
    }
    return 0;
}

/* The totals of every shard as "id:load:received " in id order. */
static void totals_text(struct open_store *s, char *out, size_t n)
{
    struct gw_ledger_entry *all = NULL;
    size_t count = 0;
    struct gw_error err;
    out[0] = '\0';
    if (gw_store_shard_totals(s->store, &s->view->topo.members, &all, &count, &err) != 0)
        return;
    for (size_t i = 0; i < count; i++)
        snprintf(out + strlen(out), n - strlen(out), "%s:%llu:%llu ", all[i].id,
                 (unsigned long long)all[i].total.load, (unsigned long long)all[i].total.received);
    free(all);
}

/* Three receipts, then the shutdown's checkpoint (docs/journal.md §7) with the fault at call
 * `at` of its thread, then a restart: it starts, every receipt reads back, the totals are the
 * same, and a failure left no temporary file. Returns 1 when the checkpoint made `at` calls. */
static int checkpoint_at(enum fault fault, int at, uint64_t unused)
{
    (void)unused;
    char dir[] = "/tmp/shardgate-store-faults-XXXXXX", cmd[4200], before[1024], after[1024];
    struct gw_buf r[3];
    const char *ids[3] = {"b-1", "b-2", "b-3"};
    struct open_store s;
    if (!mkdtemp(dir))
        return 0;
    gw_io = faulty_io;
    inj.fault = fault;
    inj.at = at;
    inj.calls = inj.hit = 0;
    CHECK_EQ_U64(open_store(&s, dir, 64u << 20), 0);
    for (int i = 0; i < 3; i++) {
        gw_buf_init(&r[i]);
        CHECK_EQ_U64(commit(&s, ids[i], &r[i]), 0);
    }
    totals_text(&s, before, sizeof(before));
    inj.writer = gw_fs(s.store)->checkpointer.worker.thread;
    __atomic_store_n(&inj.armed, 1, __ATOMIC_SEQ_CST);
    close_store(&s);
    __atomic_store_n(&inj.armed, 0, __ATOMIC_SEQ_CST);
    gw_io = gw_io_libc;
    int calls = inj.calls;
    if (fault != FAULT_CRASH)
        CHECK_REPORT(!temp_left(dir), "%s at checkpoint call %d: a temporary file is left",
                     fault_name(fault), at);
    CHECK_EQ_U64(open_store(&s, dir, 64u << 20), 0);
    for (int i = 0; i < 3; i++)
        CHECK_REPORT(reads_back(&s, ids[i], &r[i]) == 1, "%s at checkpoint call %d: %s lost",
                     fault_name(fault), at, ids[i]);
    totals_text(&s, after, sizeof(after));
    CHECK_REPORT(strcmp(before, after) == 0 && before[0],
                 "%s at checkpoint call %d: \"%s\" != "
                 "\"%s\"",
                 fault_name(fault), at, after, before);
    close_store(&s);
    for (int i = 0; i < 3; i++)
        gw_buf_free(&r[i]);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
    return calls >= at;
}

#define ARCHIVED_BATCHES 9

/* Every batch reads back whole or is archived; returns how many are archived, -1 if not. */
static int all_there(const char *dir, struct gw_buf *r, const char *what, enum fault fault, int at)
{
    struct open_store s;
    char id[16];
    int archived = 0, ok = 1;
    CHECK_EQ_U64(open_store(&s, dir, 4500), 0);
    for (int i = 0; i < ARCHIVED_BATCHES; i++) {
        snprintf(id, sizeof(id), "b-%d", i + 1);
        int got = reads_back(&s, id, &r[i]);
        ok &= got == 1 || got == 2;
        archived += got == 2;
        CHECK_REPORT(got == 1 || got == 2, "%s, %s at call %d: %s reads %d", what,
                     fault_name(fault), at, id, got);
    }
    close_store(&s);
    return ok ? archived : -1;
}

/* Nine receipts over four segments and the shutdown's checkpoint, then `shardgate journal
 * archive` (docs/journal.md §8) with the fault at its call `at`, then a start, then the archive
 * run again without a fault: each start succeeds and every receipt reads back whole or answers
 * archived, a failed run leaves no temporary file, and the second run finishes the first.
 * Returns 1 when the archive made `at` calls. */
static int archive_at(enum fault fault, int at, uint64_t unused)
{
    (void)unused;
    char dir[] = "/tmp/shardgate-store-faults-XXXXXX", away[256], cmd[600], id[16];
    struct gw_buf r[ARCHIVED_BATCHES];
    struct open_store s;
    struct gw_archive_result res;
    struct gw_error err;
    if (!mkdtemp(dir))
        return 0;
    snprintf(away, sizeof(away), "%s.archive", dir);
    if (mkdir(away, 0750) != 0)
        return 0;
    gw_io = faulty_io;
    inj.fault = fault;
    inj.at = at;
    inj.calls = inj.hit = inj.hit_write = 0;
    inj.writer = pthread_self();
    CHECK_EQ_U64(open_store(&s, dir, 4500), 0);
    for (int i = 0; i < ARCHIVED_BATCHES; i++) {
        gw_buf_init(&r[i]);
        snprintf(id, sizeof(id), "b-%d", i + 1);
        CHECK_EQ_U64(commit(&s, id, &r[i]), 0);
    }
    close_store(&s);
    __atomic_store_n(&inj.armed, 1, __ATOMIC_SEQ_CST);
    int rc = gw_journal_archive(dir, away, 1, &res, &err);
    __atomic_store_n(&inj.armed, 0, __ATOMIC_SEQ_CST);
    int calls = inj.calls;
    /* A checkpoint it cannot read is passed over, as a start does (docs/journal.md §7): the
     * run may then archive less. A failed write or sync is an error. */
    CHECK_REPORT(inj.hit ? rc != 0 || !inj.hit_write : rc == 0 && res.archived > 0,
                 "%s at archive call %d: rc %d, %zu archived", fault_name(fault), at, rc,
                 res.archived);
    if (fault != FAULT_CRASH)
        CHECK_REPORT(!temp_left(dir), "%s at archive call %d: a temporary file is left",
                     fault_name(fault), at);
    gw_io = gw_io_libc;
    all_there(dir, r, "after the faulted run", fault, at);
    CHECK_EQ_U64(gw_journal_archive(dir, away, 1, &res, &err), 0);
    CHECK_REPORT(all_there(dir, r, "after the second run", fault, at) > 0,
                 "%s at archive call %d: nothing archived", fault_name(fault), at);
    for (int i = 0; i < ARCHIVED_BATCHES; i++)
        gw_buf_free(&r[i]);
    snprintf(cmd, sizeof(cmd), "rm -rf %s %s", dir, away);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
    return calls >= at;
}

/* Three receipts, then an epoch record (a membership change, docs/journal.md §2) with the fault
 * at its call `at`, then a restart: the change is in the chain exactly when it was answered
 * recorded (a crash may leave it whole), the receipts read back, and the journal takes the
 * next commit. Returns 1 when the record made `at` calls. */
static int epoch_at(enum fault fault, int at, uint64_t unused)
{
    (void)unused;
    char dir[] = "/tmp/shardgate-store-faults-XXXXXX", moved[256], cmd[600];
    static const char d_online[] =
        "{\"shards\":[{\"id\":\"shard-a\",\"state\":\"online\",\"capacity\":20},"
        "{\"id\":\"shard-b\",\"state\":\"online\",\"capacity\":20,\"weight\":1},"
        "{\"id\":\"shard-c\",\"state\":\"online\",\"capacity\":20},"
        "{\"id\":\"shard-d\",\"state\":\"online\",\"capacity\":20},"
        "{\"id\":\"shard-e\",\"state\":\"draining\",\"capacity\":20}]}\n";
    struct gw_buf r[4];
    const char *ids[3] = {"b-1", "b-2", "b-3"};
    struct open_store s;
    struct gw_topology next;
    struct gw_epoch_entry entry, found;
    struct gw_error err;
    if (!mkdtemp(dir))
        return 0;
    snprintf(moved, sizeof(moved), "%s.shards.json", dir);
    CHECK_EQ_U64(gw_durable_write(moved, moved, d_online, strlen(d_online), 0640), 0);
    CHECK_EQ_U64(gw_exit_load_topology(conf, moved, &next), 0);
    gw_io = faulty_io;
    inj.fault = fault;
    inj.at = at;
    inj.calls = inj.hit = inj.hit_write = 0;
    CHECK_EQ_U64(open_store(&s, dir, 64u << 20), 0);
    for (int i = 0; i < 4; i++)
        gw_buf_init(&r[i]);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_U64(commit(&s, ids[i], &r[i]), 0);
    inj.writer = gw_fs(s.store)->committer.worker.thread;
    __atomic_store_n(&inj.armed, 1, __ATOMIC_SEQ_CST);
    int rc = gw_store_record_epoch(s.store, &next, GW_SOURCE_ADMIN, NULL, &entry, &err);
    int calls = inj.calls, hit = inj.hit;
    if (fault != FAULT_CRASH)
        __atomic_store_n(&inj.armed, 0, __ATOMIC_SEQ_CST);
    CHECK_REPORT(hit ? rc != 0 : rc == 0, "%s at epoch call %d: rc %d", fault_name(fault), at, rc);
    if (rc != 0)
        CHECK_REPORT(!gw_store_writable(s.store), "%s at epoch call %d: still writable",
                     fault_name(fault), at);
    close_store(&s);
    __atomic_store_n(&inj.armed, 0, __ATOMIC_SEQ_CST);
    gw_io = gw_io_libc;
    CHECK_EQ_U64(open_store(&s, dir, 64u << 20), 0);
    int in_chain = gw_chain_find(gw_store_chain(s.store), next.epoch, 0, &found);
    CHECK_REPORT(rc == 0 ? in_chain : fault == FAULT_CRASH || !in_chain,
                 "%s at epoch call %d: rc %d, in the chain %d", fault_name(fault), at, rc,
                 in_chain);
    for (int i = 0; i < 3; i++)
        CHECK_REPORT(reads_back(&s, ids[i], &r[i]) == 1, "%s at epoch call %d: %s lost",
                     fault_name(fault), at, ids[i]);
    CHECK_EQ_U64(commit(&s, "b-4", &r[3]), 0);
    close_store(&s);
    gw_topology_free(&next);
    for (int i = 0; i < 4; i++)
        gw_buf_free(&r[i]);
    snprintf(cmd, sizeof(cmd), "rm -rf %s %s", dir, moved);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
    return calls >= at;
}

/* An index whose memtable was flushed on its own before a kill -9, then the journal cut below
 * what it holds (docs/journal.md §9): its durable_seq is within the journal, its entries are
 * not. The start sees the entries past the journal by the index's top_seq and rebuilds it: the
 * cut batches are unknown (404), not an error of a record that is not there. */
static void test_index_ahead_by_top_seq(void)
{
    char dir[] = "/tmp/shardgate-store-top-XXXXXX", cmd[4200];
    struct gw_buf r[2];
    struct open_store s;
    if (!mkdtemp(dir))
        return;
    for (int i = 0; i < 2; i++)
        gw_buf_init(&r[i]);
    CHECK_EQ_U64(open_store(&s, dir, 64u << 20), 0);
    CHECK_EQ_U64(commit(&s, "b-1", &r[0]), 0);
    CHECK_EQ_U64(commit(&s, "b-2", &r[1]), 0);
    close_store(&s); /* the index durable through seq 2 */
    /* what the cut took: b-3 and b-4, in the index's files past its durable_seq */
    struct gw_idem t;
    struct gw_idem_options io = {0};
    struct gw_error err;
    uint64_t durable = 0;
    unsigned char fp[GW_FINGERPRINT_LEN] = {0};
    CHECK_EQ_U64(gw_idem_open(&t, dir, &io, &durable, &err), 0);
    CHECK_EQ_U64(durable, 2);
    CHECK_EQ_U64(gw_idem_insert(&t, "b-3", 3, fp, (struct gw_idem_ref){1, 9000, 100, 3, 0}), 0);
    CHECK_EQ_U64(gw_idem_insert(&t, "b-4", 3, fp, (struct gw_idem_ref){1, 9200, 100, 4, 0}), 0);
    CHECK_EQ_U64(gw_idem_top_seq(&t), 4);
    gw_idem_close(&t); /* RocksDB flushes its memtable; durable_seq stays 2 */
    CHECK_EQ_U64(gw_idem_open(&t, dir, &io, &durable, &err), 0);
    CHECK_EQ_U64(durable, 2);
    CHECK_EQ_U64(gw_idem_top_seq(&t), 4);
    gw_idem_close(&t);
    CHECK_EQ_U64(open_store(&s, dir, 64u << 20), 0);
    CHECK_EQ_U64(reads_back(&s, "b-1", &r[0]), 1);
    CHECK_EQ_U64(reads_back(&s, "b-2", &r[1]), 1);
    CHECK_EQ_U64(reads_back(&s, "b-3", &r[0]), 0);
    CHECK_EQ_U64(reads_back(&s, "b-4", &r[0]), 0);
    close_store(&s);
    for (int i = 0; i < 2; i++)
        gw_buf_free(&r[i]);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

/* A start that rebuilt a removed index, then a clean stop with nothing new: the stop's
 * checkpoint persists the rebuilt index (the checkpointer counts from the older of the
 * checkpoint and the index's durable_seq, docs/journal.md §9), so the next start finds it
 * durable through the journal's end. */
static void test_rebuilt_index_flushed_at_stop(void)
{
    char dir[] = "/tmp/shardgate-store-rebuilt-XXXXXX", cmd[4200];
    struct gw_buf r[2];
    struct open_store s;
    if (!mkdtemp(dir))
        return;
    gw_buf_init(&r[0]);
    gw_buf_init(&r[1]);
    CHECK_EQ_U64(open_store(&s, dir, 64u << 20), 0);
    CHECK_EQ_U64(commit(&s, "b-1", &r[0]), 0);
    CHECK_EQ_U64(commit(&s, "b-2", &r[1]), 0);
    close_store(&s);
    snprintf(cmd, sizeof(cmd), "rm -rf %s/index", dir);
    CHECK_EQ_U64(system(cmd), 0);
    CHECK_EQ_U64(open_store(&s, dir, 64u << 20), 0); /* index/ rebuilt from the journal */
    close_store(&s);
    struct gw_idem t;
    struct gw_idem_options io = {0};
    struct gw_error err;
    uint64_t durable = 0;
    CHECK_EQ_U64(gw_idem_open(&t, dir, &io, &durable, &err), 0);
    CHECK_EQ_U64(durable, 2);
    gw_idem_close(&t);
    gw_buf_free(&r[0]);
    gw_buf_free(&r[1]);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

/* Calls faulted: every one, or with SHARDGATE_FAULT_STRIDE=N every Nth and then each of the
 * last N (ops/valgrind.sh's sample: memory errors, not every fault, are its concern there). */
static int stride(void)
{
    const char *s = getenv("SHARDGATE_FAULT_STRIDE");
    int n = s ? atoi(s) : 1;
    return n > 1 ? n : 1;
}

/* Runs `run` with each fault at call 1, 2, ... until a run makes fewer calls than that (every
 * run checks its own promises). Returns the calls a run without a fault makes, the same for
 * each fault, or -1 when they differ or reach `max`. */
static int each_call(const char *what, int (*run)(enum fault, int, uint64_t), uint64_t arg, int max)
{
    enum fault all[] = {FAULT_EIO, FAULT_ENOSPC, FAULT_CRASH};
    int calls = 0, step = stride();
    for (size_t f = 0; f < sizeof(all) / sizeof(all[0]); f++) {
        int at = 1;
        while (step > 1 && at + step < max && run(all[f], at + step, arg))
            at += step; /* the calls before at + step: a run reached them all */
        while (run(all[f], at, arg) && at < max)
            at++;
        printf("%s, %s: %d calls\n", what, fault_name(all[f]), at - 1);
        calls = at >= max || (f > 0 && calls != at - 1) ? -1 : at - 1;
    }
    return calls;
}

int main(int argc, char **argv)
{
    source = argc > 1 ? argv[1] : ".";
    snprintf(conf, sizeof(conf), "%s/conf/dispatch.env", source);
    snprintf(shards, sizeof(shards), "%s/input/shards.json", source);
    /* a commit, and an epoch record, is one write and one fdatasync */
    CHECK_EQ_U64(each_call("commit", commit_at, 64u << 20, 32), 2);
    /* three receipts and the epoch line fill a segment of 4,500 bytes: the fourth commit
     * first rotates the journal (docs/journal.md §6) */
    CHECK_TRUE(each_call("rotation", commit_at, 4500, 64) > 2);
    /* the checkpoint file's calls: the index's flush before it is RocksDB's own I/O */
    CHECK_EQ_U64(each_call("checkpoint", checkpoint_at, 0, 128), 6);
    CHECK_TRUE(each_call("archive", archive_at, 0, 256) > 6);
    CHECK_EQ_U64(each_call("epoch", epoch_at, 0, 32), 2);
    test_index_ahead_by_top_seq();
    test_rebuilt_index_flushed_at_stop();
    return CHECK_DONE();
}
