/* The simulator's store and its client (docs/operations.md §5.6): a start and a stop of the
 * store on the simulated disk, and a batch sent as a client sends it, its verdict checked
 * against the model of every batch sent. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "exit.h"
#include "receipt.h"
#include "sim.h"

const char *const sim_memberships[3] = {
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

int sim_failed(struct run *r, const char *fmt, ...)
{
    if (r->failure[0])
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->failure, sizeof(r->failure), fmt, ap);
    va_end(ap);
    return -1;
}

void sim_write_plain(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "sim: cannot write %s\n", path);
        exit(2);
    }
}

/* ---- the store ---- */

int sim_store_open(struct run *r)
{
    struct gw_error err = {0};
    struct gw_topology topo;
    gw_metrics_init(&r->metrics);
    gw_view_slot_init(&r->views);
    r->view = NULL;
    if (gw_store_new(&r->store) != 0 || gw_exit_load_topology(r->conf, r->shards, &topo) != 0)
        return sim_failed(r, "cannot load the topology");
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
    return sim_failed(r, "the start refused: %d %s", rc, err.msg);
}

void sim_store_close(struct run *r)
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

struct batch *sim_find_batch(struct run *r, const char *id)
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
int sim_send_batch(struct run *r, const char *id, int variant, int race)
{
    char doc[1024];
    struct gw_batch b;
    struct gw_error err;
    struct gw_buf receipt;
    struct gw_store_miss miss;
    enum gw_commit_verdict verdict;
    batch_doc(id, variant, doc, sizeof(doc));
    if (gw_batch_parse(doc, strlen(doc), 10, &b, &err) != 0)
        return sim_failed(r, "batch %s does not parse: %s", id, err.msg);
    gw_buf_init(&receipt);
    struct batch *known = sim_find_batch(r, id);
    int rc = gw_store_claim(r->store, b.batch_id, b.batch_id_len, b.fingerprint, &verdict, &receipt,
                            &miss);
    if (rc != 0) { /* a replay's receipt archived, or damaged after a flip */
        if (!(known && ((rc == -ESTALE && r->archived) || r->flipped)))
            sim_failed(r, "claim of %s: %d", id, rc);
    } else if (known && verdict != GW_COMMIT_NEW && known->state == CUT) {
        sim_failed(r, "%s was cut from the journal, yet its claim says %d", id, (int)verdict);
    } else if (known && verdict == GW_COMMIT_NEW && known->state == ACKED) {
        sim_failed(r, "%s was acknowledged, yet its claim says new: dispatched twice", id);
    } else if (known && known->variant == variant && verdict == GW_COMMIT_REPLAY &&
               (receipt.len != known->receipt.len ||
                memcmp(receipt.data, known->receipt.data, receipt.len) != 0)) {
        sim_failed(r, "%s replayed other bytes", id);
    } else if (known && known->variant != variant && verdict != GW_COMMIT_REUSED &&
               verdict != GW_COMMIT_NEW) {
        sim_failed(r, "%s sent with another batch: verdict %d", id, (int)verdict);
    } else if (known && known->variant != variant && verdict == GW_COMMIT_NEW &&
               known->state == ACKED) {
        sim_failed(r, "%s sent with another batch was taken as new", id);
    } else if (!known && verdict != GW_COMMIT_NEW) {
        sim_failed(r, "%s never sent: verdict %d", id, (int)verdict);
    } else if (verdict == GW_COMMIT_NEW) {
        enum gw_commit_verdict second;
        struct gw_buf other;
        gw_buf_init(&other);
        if (race &&
            gw_store_claim(r->store, b.batch_id, b.batch_id_len, b.fingerprint, &second, &other,
                           &miss) == 0 &&
            second != GW_COMMIT_IN_FLIGHT)
            sim_failed(r, "%s claimed twice at once: the second verdict %d", id, (int)second);
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
