/* The deterministic simulator of the state dir's store (docs/operations.md §5.6): the store,
 * its threads and its disk in one process, driven by a seed. A history is a list of operations
 * (submits new, retried, reused and racing; membership changes; time passing; restarts; crashes
 * at any system call with any prefix of the unsynced writes kept, torn at a sector; EIO, ENOSPC,
 * short writes, failed syncs; bits flipped; archive; the index dropped), each checked against a
 * model. A failure prints the seed, a shrunk history and the command that replays it.
 *
 *   sim [--seed N] [--seeds N] [--ops N] [--history LIST] [--no-flips] [--at-least N]
 *       [--legacy JOURNAL] [--quiet]
 *
 * --legacy: every fourth seed starts from that journal, written before checksums, segments and
 * live membership (tests/golden/legacy-state), and its batches join the model as acknowledged:
 * the upgrade is one more operation among the rest. --seeds runs the seeds N, N+1, ...; --at-least
 * fails a run that reached fewer crash points; the store's log lines (stderr) are dropped unless
 * SIM_TRACE is set, which also names each operation as it runs, or the build is sanitized. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "archive.h"
#include "dispatch.h"
#include "exit.h"
#include "fileio.h"
#include "io.h"
#include "receipt.h"
#include "sim_disk.h"
#include "sim_rng.h"
#include "sim_sched.h"
#include "store.h"
#include "view.h"

#define SEGMENT_BYTES 6000
#define CHECKPOINT_MS 1000
#define MAX_BATCHES 4096
#define MAX_SHARDS 8

/* The operations, each a letter in a history and an argument that decides its details. */
enum op_kind {
    OP_SUBMIT = 'n',  /* a new batch; racing a second claim of its id when the arg says */
    OP_RETRY = 'r',   /* a batch already sent, sent again alike */
    OP_REUSE = 'u',   /* a batch id already sent, with another batch */
    OP_EPOCH = 'm',   /* a membership change: the shards file, then its epoch record */
    OP_TICK = 't',    /* time passes: checkpoints by time */
    OP_RESTART = 's', /* a clean stop and start */
    OP_CRASH = 'c',   /* a crash at one of the next system calls, then a start */
    OP_FAULT = 'f',   /* EIO, ENOSPC, a short write or a failed sync, then a start if it failed */
    OP_ARCHIVE = 'a', /* stop, `shardgate journal archive`, start */
    OP_DROP_INDEX = 'i', /* stop, index/ removed (docs/operations.md §5.2), start */
    OP_CUT =
        'k', /* stop, the journal cut before its last receipts (docs/operations.md §5.2), start */
    OP_FLIP = 'x', /* a bit flipped in a durable sector, then a start */
};

struct op {
    char kind;
    uint32_t arg;
};

/* MAYBE: answered as failed: absent or whole; CUT: its line cut by the operator: absent, and
 * new when sent again */
enum batch_state { ACKED = 1, MAYBE, CUT };

struct batch {
    char id[24];
    int variant;
    enum batch_state state;
    struct gw_buf receipt;
    char shard[MAX_SHARDS][GW_SHARD_ID_MAX + 1];
    uint64_t load[MAX_SHARDS];
    size_t shards;
};

struct run {
    uint64_t seed;
    char base[64], state[96], archive[96], conf[96], shards[96];
    struct gw_store *store;
    struct gw_store_options o;
    struct gw_metrics metrics;
    struct gw_view_slot views;
    struct gw_view *view;
    struct batch *batches;
    size_t nbatches;
    int membership;     /* which of the shards files is in force */
    int archived;       /* an archive ran: reads may answer archived */
    int flipped;        /* a bit was flipped: reads may answer damaged, a start may refuse */
    int stop_history;   /* a start refused after a flip: the history ends there */
    const char *legacy; /* the journal a legacy history starts from, or NULL */
    char base_ids[MAX_SHARDS * 4][GW_SHARD_ID_MAX + 1]; /* a legacy history: the totals it */
    uint64_t base_load[MAX_SHARDS * 4];                 /* started with, by shard */
    size_t nbase;
    char failure[1024];
    uint64_t ops_run;
};

static const char *const memberships[] = {
    "{\"shards\":[{\"id\":\"s-a\",\"state\":\"online\",\"capacity\":100},"
    "{\"id\":\"s-b\",\"state\":\"online\",\"capacity\":100},"
    "{\"id\":\"s-c\",\"state\":\"draining\",\"capacity\":100}]}\n",
    "{\"shards\":[{\"id\":\"s-a\",\"state\":\"online\",\"capacity\":100},"
    "{\"id\":\"s-b\",\"state\":\"online\",\"capacity\":100,\"weight\":3},"
    "{\"id\":\"s-c\",\"state\":\"online\",\"capacity\":100}]}\n",
    "{\"shards\":[{\"id\":\"s-a\",\"state\":\"offline\",\"capacity\":100},"
    "{\"id\":\"s-b\",\"state\":\"online\",\"capacity\":100},"
    "{\"id\":\"s-d\",\"state\":\"online\",\"capacity\":100}]}\n",
};

static int failed(struct run *r, const char *fmt, ...)
{
    if (r->failure[0])
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->failure, sizeof(r->failure), fmt, ap);
    va_end(ap);
    return -1;
}

static void write_plain(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "sim: cannot write %s\n", path);
        exit(2);
    }
}

/* ---- the store ---- */

static int store_open(struct run *r)
{
    struct gw_error err = {0};
    struct gw_topology topo;
    gw_metrics_init(&r->metrics);
    gw_view_slot_init(&r->views);
    r->view = NULL;
    if (gw_store_new(&r->store) != 0 || gw_exit_load_topology(r->conf, r->shards, &topo) != 0)
        return failed(r, "cannot load the topology");
    int rc = gw_store_open(r->store, &r->o, &topo, &r->metrics, &err);
    struct gw_epoch_entry latest;
    if (rc == 0 && gw_chain_latest(gw_store_chain(r->store), &latest))
        rc = gw_view_new(&r->views, &topo, latest.epoch_seq, gw_store_ledger(r->store), &r->view,
                         &err);
    else
        gw_topology_free(&topo);
    if (rc == 0)
        rc = gw_store_start(r->store, &r->o, &r->metrics, &err);
    if (rc == 0)
        return 0;
    gw_store_close(r->store);
    r->store = NULL;
    if (r->view)
        gw_view_unref(r->view);
    r->view = NULL;
    gw_view_slot_free(&r->views);
    if (r->flipped) { /* a refusal is right when a flipped bit broke durable bytes */
        r->stop_history = 1;
        return -1;
    }
    return failed(r, "the start refused: %d %s", rc, err.msg);
}

static void store_close(struct run *r)
{
    if (!r->store)
        return;
    gw_store_stop(r->store);
    if (r->view)
        gw_view_unref(r->view);
    gw_store_close(r->store);
    gw_view_slot_free(&r->views);
    r->store = NULL;
    r->view = NULL;
}

/* ---- batches ---- */

static struct batch *find_batch(struct run *r, const char *id)
{
    for (size_t i = 0; i < r->nbatches; i++)
        if (strcmp(r->batches[i].id, id) == 0)
            return &r->batches[i];
    return NULL;
}

/* The batch document of `id` in `variant`: one to three changes, keys from both. */
static void batch_doc(const char *id, int variant, char *doc, size_t n)
{
    int changes = 1 + variant % 3;
    int at = snprintf(doc, n, "{\"batch_id\":\"%s\",\"changes\":[", id);
    for (int c = 0; c < changes; c++)
        at += snprintf(doc + at, n - (size_t)at,
                       "%s{\"id\":\"c%d\",\"key\":\"%s/%d/%d\",\"size\":%d}", c ? "," : "", c, id,
                       variant, c, 1 + (variant * 7 + c) % 50);
    snprintf(doc + at, n - (size_t)at, "]}");
}

struct commit_wait {
    struct gw_commit_item item;
    struct gw_event done;
};

static void committed(struct gw_commit_item *item, int rc)
{
    gw_event_set(&((struct commit_wait *)item)->done, rc);
}

/* Sends batch `id` in `variant` as a client would; checks the verdict against the model. */
static int send_batch(struct run *r, const char *id, int variant, int race)
{
    char doc[1024];
    struct gw_batch b;
    struct gw_error err;
    struct gw_buf receipt;
    struct gw_store_miss miss;
    enum gw_commit_verdict verdict;
    batch_doc(id, variant, doc, sizeof(doc));
    if (gw_batch_parse(doc, strlen(doc), 10, &b, &err) != 0)
        return failed(r, "batch %s does not parse: %s", id, err.msg);
    gw_buf_init(&receipt);
    struct batch *known = find_batch(r, id);
    int rc = gw_store_claim(r->store, b.batch_id, b.batch_id_len, b.fingerprint, &verdict, &receipt,
                            &miss);
    if (rc != 0) { /* a replay's receipt archived, or damaged after a flip */
        if (!(known && ((rc == -ESTALE && r->archived) || r->flipped)))
            failed(r, "claim of %s: %d", id, rc);
    } else if (known && verdict != GW_COMMIT_NEW && known->state == CUT) {
        failed(r, "%s was cut from the journal, yet its claim says %d", id, (int)verdict);
    } else if (known && verdict == GW_COMMIT_NEW && known->state == ACKED) {
        failed(r, "%s was acknowledged, yet its claim says new: dispatched twice", id);
    } else if (known && known->variant == variant && verdict == GW_COMMIT_REPLAY &&
               (receipt.len != known->receipt.len ||
                memcmp(receipt.data, known->receipt.data, receipt.len) != 0)) {
        failed(r, "%s replayed other bytes", id);
    } else if (known && known->variant != variant && verdict != GW_COMMIT_REUSED &&
               verdict != GW_COMMIT_NEW) {
        failed(r, "%s sent with another batch: verdict %d", id, (int)verdict);
    } else if (known && known->variant != variant && verdict == GW_COMMIT_NEW &&
               known->state == ACKED) {
        failed(r, "%s sent with another batch was taken as new", id);
    } else if (!known && verdict != GW_COMMIT_NEW) {
        failed(r, "%s never sent: verdict %d", id, (int)verdict);
    } else if (verdict == GW_COMMIT_NEW) {
        enum gw_commit_verdict second;
        struct gw_buf other;
        gw_buf_init(&other);
        if (race &&
            gw_store_claim(r->store, b.batch_id, b.batch_id_len, b.fingerprint, &second, &other,
                           &miss) == 0 &&
            second != GW_COMMIT_IN_FLIGHT)
            failed(r, "%s claimed twice at once: the second verdict %d", id, (int)second);
        gw_buf_free(&other);
        struct gw_dispatch d;
        if (gw_dispatch_run(&r->view->topo, &b, &d, &err) != 0) {
            gw_store_release(r->store, b.batch_id, b.batch_id_len);
        } else {
            gw_buf_reset(&receipt);
            gw_receipt_write(&receipt, &r->view->topo, &b, &d);
            struct commit_wait c = {.item = {.receipt = receipt.data,
                                             .receipt_len = receipt.len,
                                             .fingerprint = b.fingerprint,
                                             .batch_id = id,
                                             .epoch = r->view->topo.epoch,
                                             .members = &r->view->topo.members,
                                             .tally = d.tally,
                                             .stored = &receipt,
                                             .view_epoch_seq = r->view->epoch_seq,
                                             .slots = r->view->slots,
                                             .done = committed}};
            gw_event_init(&c.done);
            gw_store_submit(r->store, &c.item);
            int crc = gw_event_wait(&c.done);
            gw_event_destroy(&c.done);
            if (!known && r->nbatches < MAX_BATCHES) {
                known = &r->batches[r->nbatches++];
                memset(known, 0, sizeof(*known));
                snprintf(known->id, sizeof(known->id), "%s", id);
                gw_buf_init(&known->receipt);
            }
            if (known) {
                known->variant = variant;
                known->state = crc == 0 ? ACKED : MAYBE;
                gw_buf_reset(&known->receipt);
                gw_buf_append(&known->receipt, receipt.data, receipt.len);
                const struct gw_membership *m = &r->view->topo.members;
                known->shards = m->count < MAX_SHARDS ? m->count : MAX_SHARDS;
                for (size_t i = 0; i < known->shards; i++) {
                    snprintf(known->shard[i], sizeof(known->shard[i]), "%s", m->shards[i].id);
                    known->load[i] = d.tally[i].load;
                }
            }
            gw_dispatch_free(&d);
        }
    }
    gw_buf_free(&receipt);
    gw_batch_free(&b);
    return r->failure[0] ? -1 : 0;
}

/* ---- the model's checks ---- */

struct feed_seen {
    struct run *r;
    uint64_t last_seq;
    unsigned char *seen; /* per model batch */
};

static int feed_visit(void *ctx, const struct gw_feed_record *rec)
{
    struct feed_seen *fs = ctx;
    if (rec->seq && fs->last_seq && rec->kind == GW_FEED_RECEIPT && rec->seq != fs->last_seq + 1)
        return failed(fs->r, "the feed steps from seq %llu to %llu",
                      (unsigned long long)fs->last_seq, (unsigned long long)rec->seq);
    if (rec->kind != GW_FEED_RECEIPT || !rec->line)
        return 0;
    fs->last_seq = rec->seq;
    const char *at = memmem(rec->line, rec->len, "\"batch_id\":\"", 12);
    if (!at)
        return failed(fs->r, "feed record %llu names no batch", (unsigned long long)rec->seq);
    at += 12;
    const char *end = memchr(at, '"', rec->len - (size_t)(at - rec->line));
    char id[32];
    snprintf(id, sizeof(id), "%.*s", end ? (int)(end - at) : 0, at);
    struct batch *b = find_batch(fs->r, id);
    if (!b)
        return failed(fs->r, "the feed holds %s, never sent", id);
    if (fs->seen[b - fs->r->batches]++)
        return failed(fs->r, "the feed holds %s twice: dispatched twice", id);
    return 0;
}

static int check_feed(struct run *r)
{
    struct feed_seen fs = {.r = r, .seen = calloc(r->nbatches + 1, 1)};
    struct gw_feed_mark pos = {0};
    struct gw_store_miss miss;
    uint64_t last = 0, after = 0;
    int rc = gw_store_feed_read(r->store, after, 0, feed_visit, &fs, &pos, &last, &miss);
    if (rc == -ESTALE && r->archived) {
        memset(&pos, 0, sizeof(pos));
        rc =
            gw_store_feed_read(r->store, miss.earliest - 1, 0, feed_visit, &fs, &pos, &last, &miss);
    }
    free(fs.seen);
    if (rc != 0 && !r->failure[0] && !(r->flipped && (rc == -EBADMSG || rc == -ENOMSG)))
        failed(r, "the feed read: %d", rc);
    return r->failure[0] ? -1 : 0;
}

/* The load each shard id should hold, summed over the batches present. */
struct loads {
    char ids[MAX_SHARDS * 4][GW_SHARD_ID_MAX + 1];
    uint64_t want[MAX_SHARDS * 4];
    size_t n;
};

static void add_load(struct loads *l, const char *id, uint64_t load)
{
    size_t j = 0;
    while (j < l->n && strcmp(l->ids[j], id) != 0)
        j++;
    if (j == l->n && l->n < MAX_SHARDS * 4)
        snprintf(l->ids[l->n++], sizeof(l->ids[0]), "%s", id);
    if (j < l->n)
        l->want[j] += load;
}

/* Every acknowledged batch reads back byte for byte (or archived, or damaged after a flip);
 * one answered as failed reads back whole or not at all; the totals are those of the batches
 * present. */
static int check_all(struct run *r)
{
    struct loads loads = {0};
    for (size_t i = 0; i < r->nbatches && !r->failure[0]; i++) {
        struct batch *b = &r->batches[i];
        struct gw_buf got;
        struct gw_store_miss miss;
        gw_buf_init(&got);
        int rc = gw_store_read_receipt(r->store, b->id, strlen(b->id), &got, &miss);
        int same =
            rc == 0 && got.len == b->receipt.len && memcmp(got.data, b->receipt.data, got.len) == 0;
        int damaged =
            rc == -EBADMSG || rc == -ENOMSG || rc == -EILSEQ || rc == -EUCLEAN || rc == -EXDEV;
        gw_buf_free(&got);
        int present = same || (rc == -ESTALE && r->archived);
        if (rc == 0 && !same)
            failed(r, "%s reads back other bytes", b->id);
        else if (b->state == ACKED && !present && !(damaged && r->flipped))
            failed(r, "%s was acknowledged and reads %d", b->id, rc);
        else if (b->state == MAYBE && !present && rc != -ENOENT && !(damaged && r->flipped))
            failed(r, "%s (answered failed) reads %d", b->id, rc);
        else if (b->state == CUT && rc != -ENOENT)
            failed(r, "%s was cut from the journal and reads %d", b->id, rc);
        if (!present)
            continue;
        for (size_t k = 0; k < b->shards; k++) /* a legacy batch has none: in the base */
            add_load(&loads, b->shard[k], b->load[k]);
    }
    if (r->failure[0] || r->flipped)
        return r->failure[0] ? -1 : 0;
    for (size_t k = 0; k < r->nbase; k++)
        add_load(&loads, r->base_ids[k], r->base_load[k]);
    struct gw_ledger_entry *all = NULL;
    size_t count = 0;
    struct gw_error err;
    if (gw_store_shard_totals(r->store, &r->view->topo.members, &all, &count, &err) != 0)
        return failed(r, "the totals: %s", err.msg);
    for (size_t j = 0; j < loads.n && !r->failure[0]; j++) {
        uint64_t have = 0;
        for (size_t i = 0; i < count; i++)
            if (strcmp(all[i].id, loads.ids[j]) == 0)
                have = (uint64_t)all[i].total.load;
        if (have != loads.want[j])
            failed(r, "shard %s: load %llu, the batches present hold %llu", loads.ids[j],
                   (unsigned long long)have, (unsigned long long)loads.want[j]);
    }
    free(all);
    return r->failure[0] ? -1 : check_feed(r);
}

/* A start, then every check. */
static int start_and_check(struct run *r)
{
    if (store_open(r) != 0)
        return -1;
    return check_all(r);
}

/* The first start of a legacy history: the journal's batches as it serves them, acknowledged,
 * and the totals they left, which every later check adds to. */
static int adopt_legacy(struct run *r)
{
    static const char *const ids[] = {"sample-0001", "legacy-0002"};
    for (size_t i = 0; i < 2; i++) {
        struct batch *b = &r->batches[r->nbatches++];
        struct gw_store_miss miss;
        memset(b, 0, sizeof(*b));
        snprintf(b->id, sizeof(b->id), "%s", ids[i]);
        b->variant = -1; /* another document than any sim_doc makes */
        b->state = ACKED;
        gw_buf_init(&b->receipt);
        if (gw_store_read_receipt(r->store, b->id, strlen(b->id), &b->receipt, &miss) != 0)
            return failed(r, "the legacy journal's %s does not read", b->id);
    }
    struct gw_ledger_entry *all = NULL;
    size_t count = 0;
    struct gw_error err;
    if (gw_store_shard_totals(r->store, &r->view->topo.members, &all, &count, &err) != 0)
        return failed(r, "the legacy totals: %s", err.msg);
    for (size_t i = 0; i < count && r->nbase < MAX_SHARDS * 4; i++, r->nbase++) {
        snprintf(r->base_ids[r->nbase], sizeof(r->base_ids[0]), "%s", all[i].id);
        r->base_load[r->nbase] = (uint64_t)all[i].total.load;
    }
    free(all);
    return 0;
}

/* ---- the operations ---- */

static int next_id(struct run *r, char *id)
{
    snprintf(id, 24, "b-%zu", r->nbatches + 1);
    return 0;
}

static int op_submit(struct run *r, uint32_t arg)
{
    char id[24];
    next_id(r, id);
    return send_batch(r, id, (int)(arg % 5), (arg >> 8) % 4 == 0);
}

static int op_retry(struct run *r, uint32_t arg, int reuse)
{
    if (!r->nbatches)
        return op_submit(r, arg);
    struct batch *b = &r->batches[arg % r->nbatches];
    reuse |= b->variant < 0; /* a legacy batch's document is not one this makes: reused */
    char id[24];
    snprintf(id, sizeof(id), "%s", b->id);
    int variant = reuse ? (b->variant + 1 + (int)((arg >> 8) % 4)) % 5 : b->variant;
    return send_batch(r, id, variant, 0);
}

static int op_epoch(struct run *r, uint32_t arg)
{
    int next = (r->membership + 1 + (int)(arg % 2)) % 3;
    struct gw_topology topo;
    struct gw_epoch_entry entry;
    struct gw_error err;
    write_plain(r->shards, memberships[next]);
    r->membership = next;
    if (gw_exit_load_topology(r->conf, r->shards, &topo) != 0)
        return failed(r, "cannot load membership %d", next);
    int rc = gw_store_record_epoch(r->store, &topo, GW_SOURCE_ADMIN, NULL, &entry, &err);
    if (rc != 0) { /* the journal failed: a start records it from the file */
        gw_topology_free(&topo);
        return 0;
    }
    struct gw_view *v;
    if (gw_view_new(&r->views, &topo, entry.epoch_seq, gw_store_ledger(r->store), &v, &err) != 0)
        return failed(r, "view: %s", err.msg);
    gw_view_unref(r->view);
    r->view = v;
    return 0;
}

static int restart(struct run *r)
{
    store_close(r);
    return start_and_check(r);
}

static int op_crash(struct run *r, uint32_t arg)
{
    sim_disk_arm(SIM_CRASH, 1 + arg % 40);
    for (uint32_t i = 0; i < 1 + (arg >> 8) % 3 && !sim_disk_hit(); i++)
        if (op_submit(r, arg >> (10 + i)) != 0)
            return -1;
    if (!sim_disk_hit() && (arg >> 16) % 2)
        sim_sched_sleep((uint64_t)CHECKPOINT_MS * 2000000u);
    store_close(r); /* every call fails once the crash is reached */
    sim_disk_crash((arg >> 20) % 4 != 0);
    return start_and_check(r);
}

static int op_fault(struct run *r, uint32_t arg)
{
    static const enum sim_fault faults[] = {SIM_EIO, SIM_ENOSPC, SIM_SHORT, SIM_SYNC_LOST};
    sim_disk_arm(faults[arg % 4], 1 + (arg >> 4) % 12);
    for (uint32_t i = 0; i < 2; i++)
        if (op_submit(r, arg >> (12 + i)) != 0)
            return -1;
    sim_disk_arm(SIM_NONE, 0);
    return gw_store_writable(r->store) ? 0 : restart(r);
}

static int op_archive(struct run *r)
{
    struct gw_archive_result res;
    struct gw_error err;
    store_close(r);
    int rc = gw_journal_archive(r->state, r->archive, 1, &res, &err);
    if (rc != 0 && !r->flipped)
        return failed(r, "archive: %d %s", rc, err.msg);
    if (rc != 0 && r->flipped) { /* a flipped bit in an archived copy is found: right */
        r->stop_history = 1;
        return 0;
    }
    r->archived |= res.archived > 0;
    return start_and_check(r);
}

static int op_drop_index(struct run *r)
{
    char cmd[256];
    store_close(r);
    snprintf(cmd, sizeof(cmd), "rm -rf %s/index", r->state);
    if (system(cmd) != 0)
        return failed(r, "cannot remove index/");
    return start_and_check(r);
}

/* The newest checkpoint's last seq (0: none). */
static uint64_t newest_checkpoint(const struct run *r)
{
    uint64_t newest = 0;
    DIR *d = opendir(r->state);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        unsigned long long seq;
        if (sscanf(e->d_name, "checkpoint-%20llu.json", &seq) == 1 && seq > newest)
            newest = seq;
    }
    if (d)
        closedir(d);
    return newest;
}

/* The documented cut (docs/operations.md §5.2): the journal's last 1 to 3 receipt lines, when
 * its active segment ends with that many, removed, and the batches they held told to be gone;
 * with segments archived, not past the newest checkpoint, which is what covers them. */
static int op_cut(struct run *r, uint32_t arg)
{
    char path[160];
    FILE *f;
    char *text = NULL;
    size_t len = 0;
    store_close(r);
    snprintf(path, sizeof(path), "%s/journal.jsonl", r->state);
    if (gw_file_read(path, &text, &len) != 0)
        return failed(r, "cut: cannot read %s", path);
    size_t end = len, lines = 1 + arg % 3;
    uint64_t keep = r->archived ? newest_checkpoint(r) : 0;
    for (; lines > 0 && end > 0; lines--) {
        size_t start = end - 1;
        while (start > 0 && text[start - 1] != '\n')
            start--;
        unsigned long long seq = 0;
        if (sscanf(text + start, "{\"type\":\"receipt\",\"seq\":%llu", &seq) != 1 || seq <= keep)
            break;
        const char *at = memmem(text + start, end - start, "\"batch_id\":\"", 12);
        char id[32];
        snprintf(id, sizeof(id), "%.*s", at ? (int)strcspn(at + 12, "\"") : 0, at ? at + 12 : "");
        struct batch *b = find_batch(r, id);
        if (!b) {
            free(text);
            return failed(r, "cut: the journal holds %s, never sent", id);
        }
        b->state = CUT;
        end = start;
    }
    if (end < len &&
        (!(f = fopen(path, "r+")) || ftruncate(fileno(f), (off_t)end) != 0 || fclose(f) != 0)) {
        free(text);
        return failed(r, "cut: cannot cut %s", path);
    }
    free(text);
    sim_disk_settle(); /* the operator's cut, synced as `sync` would */
    return start_and_check(r);
}

static int op_flip(struct run *r, uint32_t arg)
{
    char path[4096];
    store_close(r);
    if (sim_disk_flip((int)(arg % 2), path) == 0)
        r->flipped = 1;
    sim_disk_crash(1);
    int rc = start_and_check(r);
    r->stop_history = 1; /* what a flip leaves damaged, nothing after it judges */
    return rc;
}

static int run_op(struct run *r, const struct op *op)
{
    switch (op->kind) {
    case OP_SUBMIT:
        return op_submit(r, op->arg);
    case OP_RETRY:
        return op_retry(r, op->arg, 0);
    case OP_REUSE:
        return op_retry(r, op->arg, 1);
    case OP_EPOCH:
        return op_epoch(r, op->arg);
    case OP_TICK:
        sim_sched_sleep((uint64_t)(1 + op->arg % 3) * CHECKPOINT_MS * 1000000u);
        return 0;
    case OP_RESTART:
        return restart(r);
    case OP_CRASH:
        return op_crash(r, op->arg);
    case OP_FAULT:
        return op_fault(r, op->arg);
    case OP_ARCHIVE:
        return op_archive(r);
    case OP_DROP_INDEX:
        return op_drop_index(r);
    case OP_CUT:
        return op_cut(r, op->arg);
    case OP_FLIP:
        return op_flip(r, op->arg);
    }
    return failed(r, "unknown operation '%c'", op->kind);
}

/* ---- a history ---- */

static void setup(struct run *r)
{
    snprintf(r->base, sizeof(r->base), "/dev/shm/shardgate-sim-XXXXXX");
    if (!mkdtemp(r->base)) {
        perror("sim: mkdtemp");
        exit(2);
    }
    snprintf(r->state, sizeof(r->state), "%s/state", r->base);
    snprintf(r->archive, sizeof(r->archive), "%s/archive", r->base);
    snprintf(r->conf, sizeof(r->conf), "%s/dispatch.env", r->base);
    snprintf(r->shards, sizeof(r->shards), "%s/shards.json", r->base);
    if (mkdir(r->state, 0750) != 0 || mkdir(r->archive, 0750) != 0) {
        perror("sim: mkdir");
        exit(2);
    }
    /* a legacy history keeps the contract its journal was written with (conf/dispatch.env) */
    write_plain(r->conf, r->legacy ? "DISPATCH_HASH_RING=ketama\nDISPATCH_VNODES=160\n"
                                     "DISPATCH_RING_HASH=sha1\nDISPATCH_CAPACITY_POLICY=report\n"
                                   : "DISPATCH_HASH_RING=ketama\nDISPATCH_VNODES=40\n"
                                     "DISPATCH_RING_HASH=sha1\nDISPATCH_CAPACITY_POLICY=report\n");
    write_plain(r->shards, memberships[0]);
    r->o = (struct gw_store_options){.state_dir = r->state,
                                     .segment_bytes = SEGMENT_BYTES,
                                     .checkpoint_interval_ms = CHECKPOINT_MS,
                                     .max_watchers = 4};
}

/* A legacy history's state dir: the journal alone, as that version left it. */
static void put_legacy(struct run *r)
{
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "cp '%s' %s/journal.jsonl", r->legacy, r->state);
    if (system(cmd) != 0) {
        fprintf(stderr, "sim: cannot copy %s\n", r->legacy);
        exit(2);
    }
}

static void teardown(struct run *r)
{
    char cmd[256];
    for (size_t i = 0; i < r->nbatches; i++)
        gw_buf_free(&r->batches[i].receipt);
    free(r->batches);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", r->base);
    if (system(cmd) != 0)
        fprintf(stderr, "sim: cannot remove %s\n", r->base);
}

struct totals {
    uint64_t histories, ops, crashes, torn, faults, flips, lost_writes, calls, switches;
};

/* Runs one history; returns 0, or -1 with the failure in `why` (1024 bytes). */
static const char *legacy_journal; /* --legacy */

static int run_history(uint64_t seed, const struct op *ops, size_t n, char *why, struct totals *t)
{
    struct run r;
    memset(&r, 0, sizeof(r));
    r.seed = seed;
    r.batches = calloc(MAX_BATCHES, sizeof(*r.batches));
    r.legacy = legacy_journal && seed % 4 == 0 ? legacy_journal : NULL;
    setup(&r);
    if (r.legacy)
        put_legacy(&r);
    sim_sched_install(seed);
    sim_disk_install(r.state, r.archive, seed);
    int rc = store_open(&r);
    if (rc == 0 && r.legacy)
        rc = adopt_legacy(&r);
    if (rc == 0)
        rc = check_all(&r);
    int trace = getenv("SIM_TRACE") != NULL;
    for (size_t i = 0; i < n && rc == 0 && !r.stop_history; i++, r.ops_run++) {
        if (trace)
            fprintf(stderr, "sim: op %zu: %c%u\n", i, ops[i].kind, ops[i].arg);
        /* each operation's choices from the seed and its own argument alone, so that a history
         * with operations taken out still makes the same choices in the rest */
        sim_sched_reseed(seed ^ ((uint64_t)ops[i].arg << 20) ^ (uint64_t)ops[i].kind);
        sim_disk_reseed(seed ^ ((uint64_t)ops[i].arg << 24) ^ (uint64_t)ops[i].kind);
        rc = run_op(&r, &ops[i]);
    }
    if (rc == 0 && !r.stop_history)
        rc = restart(&r);
    store_close(&r);
    const struct sim_disk_counts *c = sim_disk_counts();
    if (t) {
        t->histories++;
        t->ops += r.ops_run;
        t->crashes += c->crashes;
        t->torn += c->torn;
        t->faults += c->faults;
        t->flips += c->flips;
        t->lost_writes += c->lost_writes;
        t->calls += c->calls;
        t->switches += sim_sched_switches();
    }
    sim_disk_uninstall();
    sim_sched_uninstall();
    snprintf(why, 1024, "%s", r.failure[0] ? r.failure : "stopped");
    teardown(&r);
    return r.failure[0] ? -1 : 0;
}

/* The history a seed makes: `n` operations, crashes and submits the most frequent. */
static void make_history(uint64_t seed, struct op *ops, size_t n, int flips)
{
    static const char weights[] = "nnnnnnnnnrrruummttscccccccfffaik";
    struct sim_rng rng;
    sim_rng_seed(&rng, seed * 0x9e3779b97f4a7c15ull + 1);
    for (size_t i = 0; i < n; i++) {
        ops[i].kind = weights[sim_rng_below(&rng, sizeof(weights) - 1)];
        ops[i].arg = (uint32_t)sim_rng_next(&rng);
    }
    if (flips && n && sim_rng_below(&rng, 2)) /* a flip weakens what may be read: last only */
        ops[n - 1].kind = OP_FLIP;
}

static void print_history(FILE *f, const struct op *ops, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%c%u", i ? "," : "", ops[i].kind, ops[i].arg);
}

static size_t parse_history(const char *text, struct op *ops, size_t max)
{
    size_t n = 0;
    while (*text && n < max) {
        ops[n].kind = *text++;
        ops[n].arg = (uint32_t)strtoul(text, (char **)&text, 10);
        n++;
        if (*text == ',')
            text++;
    }
    return n;
}

/* Removes operations while the history still fails: halves, then quarters, ..., then one by
 * one until no single removal keeps it failing (at most 1,500 replays). */
static size_t shrink(uint64_t seed, struct op *ops, size_t n, char *why)
{
    char now[1024];
    int replays = 0;
    for (size_t chunk = n / 2, was = 0; chunk >= 1; chunk = chunk > 1 ? chunk / 2 : 1) {
        if (chunk == 1 && was == n)
            break; /* a whole pass of single removals changed nothing */
        was = chunk == 1 ? n : 0;
        for (size_t at = 0; at + chunk <= n && replays < 1500; replays++) {
            struct op *tried = malloc(n * sizeof(*ops));
            memcpy(tried, ops, at * sizeof(*ops));
            memcpy(tried + at, ops + at + chunk, (n - at - chunk) * sizeof(*ops));
            if (run_history(seed, tried, n - chunk, now, NULL) != 0) {
                memcpy(ops, tried, (n - chunk) * sizeof(*ops));
                n -= chunk;
                snprintf(why, 1024, "%s", now);
            } else {
                at += chunk;
            }
            free(tried);
        }
        if (replays >= 1500)
            break;
    }
    return n;
}

int main(int argc, char **argv)
{
    uint64_t seed = 1, seeds = 1;
    size_t nops = 200;
    const char *history = NULL;
    int quiet = 0, flips = 1;
    uint64_t at_least = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--seeds") && i + 1 < argc)
            seeds = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--ops") && i + 1 < argc)
            nops = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--history") && i + 1 < argc)
            history = argv[++i];
        else if (!strcmp(argv[i], "--quiet"))
            quiet = 1;
        else if (!strcmp(argv[i], "--no-flips"))
            flips = 0;
        else if (!strcmp(argv[i], "--legacy") && i + 1 < argc)
            legacy_journal = argv[++i];
        else if (!strcmp(argv[i], "--at-least") && i + 1 < argc)
            at_least = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: sim [--seed N] [--seeds N] [--ops N] [--history LIST] "
                            "[--no-flips] [--at-least N] [--legacy JOURNAL] [--quiet]\n");
            return 2;
        }
    }
#ifndef __SANITIZE_ADDRESS__ /* under the sanitizers, stderr carries their reports */
    if (!getenv("SIM_TRACE") && !freopen("/dev/null", "w", stderr))
        return 2;
#endif
    struct op *ops = calloc(history ? strlen(history) + 1 : nops, sizeof(*ops));
    struct totals t = {0};
    char why[1024];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int failures = 0;
    for (uint64_t s = seed; s < seed + (history ? 1 : seeds); s++) {
        size_t n = history ? parse_history(history, ops, strlen(history) + 1) : nops;
        if (!history)
            make_history(s, ops, n, flips);
        if (run_history(s, ops, n, why, &t) == 0)
            continue;
        failures++;
        printf("sim: seed %llu fails: %s\n", (unsigned long long)s, why);
        if (!history)
            n = shrink(s, ops, n, why);
        printf("sim: shrunk to %zu operations: %s\nsim: replay: tests/sim/sim --seed %llu "
               "--history '",
               n, why, (unsigned long long)s);
        print_history(stdout, ops, n);
        printf("'\n");
        break;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (!quiet || failures)
        printf("sim: %llu histories, %llu operations, %llu crash points, %llu torn writes, "
               "%llu faults, %llu bits flipped, %llu unsynced writes lost, %llu system calls, "
               "%llu thread switches, %.1f s\n",
               (unsigned long long)t.histories, (unsigned long long)t.ops,
               (unsigned long long)t.crashes, (unsigned long long)t.torn,
               (unsigned long long)t.faults, (unsigned long long)t.flips,
               (unsigned long long)t.lost_writes, (unsigned long long)t.calls,
               (unsigned long long)t.switches, secs);
    free(ops);
    if (!failures && t.crashes < at_least) {
        printf("sim: %llu crash points, fewer than the %llu asked for\n",
               (unsigned long long)t.crashes, (unsigned long long)at_least);
        return 1;
    }
    return failures ? 1 : 0;
}
