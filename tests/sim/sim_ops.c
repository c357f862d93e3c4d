/* The simulator's operations (docs/operations.md §5.6): each a letter and a number in a
 * history, the number deciding its details. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive.h"
#include "exit.h"
#include "fileio.h"
#include "sim.h"
#include "sim_disk.h"
#include "sim_sched.h"

static int next_id(struct run *r, char *id)
{
    snprintf(id, 24, "b-%zu", r->nbatches + 1);
    return 0;
}

static int op_submit(struct run *r, uint32_t arg)
{
    char id[24];
    next_id(r, id);
    return sim_send_batch(r, id, (int)(arg % 5), (arg >> 8) % 4 == 0);
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
    return sim_send_batch(r, id, variant, 0);
}

static int op_epoch(struct run *r, uint32_t arg)
{
    int next = (r->membership + 1 + (int)(arg % 2)) % 3;
    struct gw_topology topo;
    struct gw_epoch_entry entry;
    struct gw_error err;
    sim_write_plain(r->shards, sim_memberships[next]);
    r->membership = next;
    if (gw_exit_load_topology(r->conf, r->shards, &topo) != 0)
        return sim_failed(r, "cannot load membership %d", next);
    int rc = gw_store_record_epoch(r->store, &topo, GW_SOURCE_ADMIN, NULL, &entry, &err);
    if (rc != 0) { /* the journal sim_failed: a start records it from the file */
        gw_topology_free(&topo);
        return 0;
    }
    struct gw_view *v;
    if (gw_view_new(&r->views, &topo, entry.epoch_seq, gw_store_ledger(r->store), &v, &err) != 0)
        return sim_failed(r, "view: %s", err.msg);
    gw_view_unref(r->view);
    r->view = v;
    return 0;
}

static int op_crash(struct run *r, uint32_t arg)
{
    sim_disk_arm(SIM_CRASH, 1 + arg % 40);
    for (uint32_t i = 0; i < 1 + (arg >> 8) % 3 && !sim_disk_hit(); i++)
        if (op_submit(r, arg >> (10 + i)) != 0)
            return -1;
    if (!sim_disk_hit() && (arg >> 16) % 2)
        sim_sched_sleep((uint64_t)CHECKPOINT_MS * 2000000u);
    sim_store_close(r); /* every call fails once the crash is reached */
    sim_disk_crash((arg >> 20) % 4 != 0);
    return sim_start_and_check(r);
}

static int op_fault(struct run *r, uint32_t arg)
{
    static const enum sim_fault faults[] = {SIM_EIO, SIM_ENOSPC, SIM_SHORT, SIM_SYNC_LOST};
    sim_disk_arm(faults[arg % 4], 1 + (arg >> 4) % 12);
    for (uint32_t i = 0; i < 2; i++)
        if (op_submit(r, arg >> (12 + i)) != 0)
            return -1;
    sim_disk_arm(SIM_NONE, 0);
    return gw_store_writable(r->store) ? 0 : sim_restart(r);
}

static int op_archive(struct run *r)
{
    struct gw_archive_result res;
    struct gw_error err;
    sim_store_close(r);
    int rc = gw_journal_archive(r->state, r->archive, 1, &res, &err);
    if (rc != 0 && !r->flipped)
        return sim_failed(r, "archive: %d %s", rc, err.msg);
    if (rc != 0 && r->flipped) { /* a flipped bit in an archived copy is found: right */
        r->stop_history = 1;
        return 0;
    }
    r->archived |= res.archived > 0;
    return sim_start_and_check(r);
}

static int op_drop_index(struct run *r)
{
    char cmd[256];
    sim_store_close(r);
    snprintf(cmd, sizeof(cmd), "rm -rf %s/index", r->state);
    if (system(cmd) != 0)
        return sim_failed(r, "cannot remove index/");
    return sim_start_and_check(r);
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
    sim_store_close(r);
    snprintf(path, sizeof(path), "%s/journal.jsonl", r->state);
    if (gw_file_read(path, &text, &len) != 0)
        return sim_failed(r, "cut: cannot read %s", path);
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
        struct batch *b = sim_find_batch(r, id);
        if (!b) {
            free(text);
            return sim_failed(r, "cut: the journal holds %s, never sent", id);
        }
        b->state = CUT;
        end = start;
    }
    if (end < len &&
        (!(f = fopen(path, "r+")) || ftruncate(fileno(f), (off_t)end) != 0 || fclose(f) != 0)) {
        free(text);
        return sim_failed(r, "cut: cannot cut %s", path);
    }
    free(text);
    sim_disk_settle(); /* the operator's cut, synced as `sync` would */
    return sim_start_and_check(r);
}

static int op_flip(struct run *r, uint32_t arg)
{
    char path[4096];
    sim_store_close(r);
    if (sim_disk_flip((int)(arg % 2), path) == 0)
        r->flipped = 1;
    sim_disk_crash(1);
    int rc = sim_start_and_check(r);
    r->stop_history = 1; /* what a flip leaves damaged, nothing after it judges */
    return rc;
}

int sim_run_op(struct run *r, const struct op *op)
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
        return sim_restart(r);
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
    return sim_failed(r, "unknown operation '%c'", op->kind);
}
