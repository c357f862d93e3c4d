/* history_gen: writes a valid state dir of N acknowledged batches (one change each) without
 * HTTP, through the store's own code: the journal's epoch record, receipt records in groups,
 * rotation at --segment-bytes, the ledger, and a checkpoint (index persisted first) at every
 * rotation and at the end (docs/journal.md §6, §7; docs/performance.md §12).
 * usage: history_gen CONF SHARDS STATE_DIR N [SEGMENT_BYTES] */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "dispatch.h"
#include "exit.h"
#include "idempotency.h"
#include "line_check.h"
#include "journal.h"
#include "receipt.h"
#include "view.h"

#define GROUP 2000

struct gen {
    struct gw_journal j;
    struct gw_ledger ledger;
    struct gw_idem idem;
    struct gw_view *view;
    struct gw_buf group, receipt, doc;
};

static int noop_visit(void *ctx, const struct gw_journal_record *rec, struct gw_error *err)
{
    (void)ctx;
    (void)rec;
    (void)err;
    return 0;
}

static int checkpoint(struct gen *g, struct gw_error *err)
{
    struct gw_checkpoint_snapshot s;
    int rc = gw_checkpoint_take(&g->j, &g->ledger, &s);
    if (rc == 0)
        rc = gw_idem_persist(&g->idem, s.last_seq, err);
    if (rc == 0)
        rc = gw_checkpoint_write(g->j.dir, &s, s.last_seq, err);
    gw_checkpoint_snapshot_free(&s);
    return rc;
}

/* Appends batch `i` to the group; its ref is known once the group's offset is. */
static int add_batch(struct gen *g, uint64_t i, uint64_t seq, struct gw_error *err)
{
    const struct gw_topology *t = &g->view->topo;
    struct gw_batch b;
    struct gw_dispatch d;
    gw_buf_reset(&g->doc);
    gw_buf_field_u64(&g->doc, "{\"batch_id\":\"h", i);
    gw_buf_field_u64(&g->doc, "\",\"changes\":[{\"id\":\"c0\",\"key\":\"k", i);
    gw_buf_puts(&g->doc, "\",\"size\":1}]}");
    int rc = gw_batch_parse(g->doc.data, g->doc.len, 1, &b, err);
    if (rc != 0)
        return rc;
    rc = gw_dispatch_run(t, &b, &d, err);
    if (rc == 0) {
        gw_buf_reset(&g->receipt);
        gw_receipt_write(&g->receipt, t, &b, &d);
        size_t line = g->group.len;
        gw_records_receipt_prefix(&g->group, seq, b.fingerprint);
        struct gw_idem_ref ref = {g->j.segment, g->j.size + g->group.len, g->receipt.len, seq, 0};
        gw_buf_append(&g->group, g->receipt.data, g->receipt.len);
        gw_buf_puts(&g->group, "}");
        gw_record_end(&g->group, line); /* the line's crc32 (docs/journal.md §2.1) */
        rc = gw_idem_insert(&g->idem, b.batch_id, b.batch_id_len, b.fingerprint, ref);
        if (rc == 0)
            rc = gw_ledger_add(&g->ledger, g->view->epoch_seq, g->view->slots, d.tally,
                               t->members.count);
        gw_dispatch_free(&d);
    }
    gw_batch_free(&b);
    return g->group.failed ? -ENOMEM : rc;
}

/* One group of up to GROUP batches, rotating first when the segment would pass its size. */
static int write_group(struct gen *g, uint64_t from, uint64_t n, struct gw_error *err)
{
    gw_buf_reset(&g->group);
    int rc = 0;
    for (uint64_t k = 0; k < n && rc == 0; k++) {
        if (g->j.last_seq + k >= g->j.segment && g->j.size + g->group.len > g->j.segment_bytes) {
            n = k; /* the rest goes into the next segment */
            break;
        }
        rc = add_batch(g, from + k, g->j.last_seq + k + 1, err);
    }
    if (rc == 0 && n > 0)
        rc = gw_journal_append(&g->j, g->group.data, g->group.len, NULL, err);
    if (rc == 0)
        g->j.last_seq += n;
    return rc != 0 ? rc : (int)n;
}

static int generate(struct gen *g, uint64_t count, struct gw_error *err)
{
    uint64_t done = 0;
    while (done < count) {
        uint64_t n = count - done < GROUP ? count - done : GROUP;
        int wrote = write_group(g, done, n, err);
        if (wrote < 0)
            return wrote;
        done += (uint64_t)wrote;
        if ((uint64_t)wrote < n) {
            int rc = gw_journal_rotate(&g->j, err);
            if (rc == 0)
                rc = checkpoint(g, err);
            if (rc != 0)
                return rc;
        }
    }
    return checkpoint(g, err);
}

static int setup(struct gen *g, const char *conf, const char *shards, const char *dir,
                 uint64_t segment_bytes, struct gw_view_slot *views, struct gw_error *err)
{
    struct gw_topology topo;
    struct gw_journal_repair rep;
    struct gw_idem_options o = {0};
    uint64_t durable;
    int written;
    if (gw_exit_load_topology(conf, shards, &topo) != GW_EXIT_OK)
        return -EINVAL;
    int rc = gw_journal_prepare(&g->j, dir, segment_bytes, 0, err);
    if (rc == 0 && g->j.segs.count + g->j.size > 0) {
        gw_error_set(err, "", "history_gen: %s is not empty", dir);
        rc = -EEXIST;
    }
    if (rc == 0)
        rc = gw_journal_replay(&g->j, NULL, noop_visit, NULL, &rep, err);
    if (rc == 0)
        rc = gw_journal_write_epoch(&g->j, &topo, &written, err);
    if (rc == 0)
        rc = gw_idem_open(&g->idem, dir, &o, &durable, err);
    if (rc == 0)
        rc = gw_view_new(views, &topo, 1, &g->ledger, &g->view, err);
    else
        gw_topology_free(&topo);
    return rc;
}

int main(int argc, char **argv)
{
    static struct gen g;
    struct gw_view_slot views;
    struct gw_error err = {0};
    if (argc < 5 || argc > 6) {
        fprintf(stderr, "usage: history_gen CONF SHARDS STATE_DIR N [SEGMENT_BYTES]\n");
        return 64;
    }
    uint64_t n = strtoull(argv[4], NULL, 10);
    uint64_t seg = argc == 6 ? strtoull(argv[5], NULL, 10) : GW_SEGMENT_BYTES_DEFAULT;
    gw_view_slot_init(&views);
    gw_ledger_init(&g.ledger);
    gw_buf_init(&g.group);
    gw_buf_init(&g.receipt);
    gw_buf_init(&g.doc);
    int rc = setup(&g, argv[1], argv[2], argv[3], seg, &views, &err);
    if (rc == 0)
        rc = generate(&g, n, &err);
    if (rc != 0)
        fprintf(stderr, "history_gen: %s\n", err.msg[0] ? err.msg : strerror(-rc));
    else
        printf("history_gen: %llu batches, %zu sealed segments, active %llu bytes\n",
               (unsigned long long)g.j.last_seq, g.j.segs.count, (unsigned long long)g.j.size);
    return rc == 0 ? 0 : 1;
}
