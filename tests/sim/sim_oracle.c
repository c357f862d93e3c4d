/* The simulator's oracle (docs/operations.md §5.6): after every start, every batch of the model
 * read back from the store, the feed read whole, and every shard's load summed over the
 * batches present. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

struct feed_seen {
    struct run *r;
    uint64_t last_seq;
    unsigned char *seen; /* per model batch */
};

static int feed_visit(void *ctx, const struct gw_feed_record *rec)
{
    struct feed_seen *fs = ctx;
    if (rec->seq && fs->last_seq && rec->kind == GW_FEED_RECEIPT && rec->seq != fs->last_seq + 1)
        return sim_failed(fs->r, "the feed steps from seq %llu to %llu",
                          (unsigned long long)fs->last_seq, (unsigned long long)rec->seq);
    if (rec->kind != GW_FEED_RECEIPT || !rec->line)
        return 0;
    fs->last_seq = rec->seq;
    const char *at = memmem(rec->line, rec->len, "\"batch_id\":\"", 12);
    if (!at)
        return sim_failed(fs->r, "feed record %llu names no batch", (unsigned long long)rec->seq);
    at += 12;
    const char *end = memchr(at, '"', rec->len - (size_t)(at - rec->line));
    char id[32];
    snprintf(id, sizeof(id), "%.*s", end ? (int)(end - at) : 0, at);
    struct batch *b = sim_find_batch(fs->r, id);
    if (!b)
        return sim_failed(fs->r, "the feed holds %s, never sent", id);
    if (fs->seen[b - fs->r->batches]++)
        return sim_failed(fs->r, "the feed holds %s twice: dispatched twice", id);
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
        sim_failed(r, "the feed read: %d", rc);
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
 * one answered as sim_failed reads back whole or not at all; the totals are those of the batches
 * present. */
int sim_check_all(struct run *r)
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
            sim_failed(r, "%s reads back other bytes", b->id);
        else if (b->state == ACKED && !present && !(damaged && r->flipped))
            sim_failed(r, "%s was acknowledged and reads %d", b->id, rc);
        else if (b->state == MAYBE && !present && rc != -ENOENT && !(damaged && r->flipped))
            sim_failed(r, "%s (answered sim_failed) reads %d", b->id, rc);
        else if (b->state == CUT && rc != -ENOENT)
            sim_failed(r, "%s was cut from the journal and reads %d", b->id, rc);
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
        return sim_failed(r, "the totals: %s", err.msg);
    for (size_t j = 0; j < loads.n && !r->failure[0]; j++) {
        uint64_t have = 0;
        for (size_t i = 0; i < count; i++)
            if (strcmp(all[i].id, loads.ids[j]) == 0)
                have = (uint64_t)all[i].total.load;
        if (have != loads.want[j])
            sim_failed(r, "shard %s: load %llu, the batches present hold %llu", loads.ids[j],
                       (unsigned long long)have, (unsigned long long)loads.want[j]);
    }
    free(all);
    return r->failure[0] ? -1 : check_feed(r);
}

/* A start, then every check. */
int sim_start_and_check(struct run *r)
{
    if (sim_store_open(r) != 0)
        return -1;
    return sim_check_all(r);
}

/* A clean stop, then a start and every check. */
int sim_restart(struct run *r)
{
    sim_store_close(r);
    return sim_start_and_check(r);
}

/* The first start of a legacy history: the journal's batches as it serves them, acknowledged,
 * and the totals they left, which every later check adds to. */
int sim_adopt_legacy(struct run *r)
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
            return sim_failed(r, "the legacy journal's %s does not read", b->id);
    }
    struct gw_ledger_entry *all = NULL;
    size_t count = 0;
    struct gw_error err;
    if (gw_store_shard_totals(r->store, &r->view->topo.members, &all, &count, &err) != 0)
        return sim_failed(r, "the legacy totals: %s", err.msg);
    for (size_t i = 0; i < count && r->nbase < MAX_SHARDS * 4; i++, r->nbase++) {
        snprintf(r->base_ids[r->nbase], sizeof(r->base_ids[0]), "%s", all[i].id);
        r->base_load[r->nbase] = (uint64_t)all[i].total.load;
    }
    free(all);
    return 0;
}
