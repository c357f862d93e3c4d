/* Startup replay of `shardgate serve`: every journaled receipt back into the idempotency table
 * and the totals, the torn tail logged, then the epoch (docs/operations.md §3). */
#include "request.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exit.h"
#include "log.h"
#include "membership.h"

/* Journal replay: each receipt record feeds the idempotency table and the totals. */
static int replay_receipt(void *ctx, const struct gw_journal_record *rec, struct gw_error *err)
{
    struct gw_server *s = ctx;
    if (!rec->receipt) /* an epoch record: its shards are known from now on (GET /v1/shards) */
    {
        if (gw_ledger_register(&s->ledger, rec->members, NULL) == 0)
            return 0;
        gw_error_set(err, "", "out of memory");
        return -ENOMEM;
    }
    json_t *id = json_object_get(rec->receipt, "batch_id");
    json_t *shards = json_object_get(rec->receipt, "shards");
    if (!json_is_string(id) ||
        !gw_name_valid(json_string_value(id), json_string_length(id), GW_BATCH_ID_MAX) ||
        !json_is_object(shards)) {
        gw_error_set(err, "", "receipt: needs a valid batch_id and a shards object");
        return -EINVAL;
    }
    const char *shard;
    json_t *v;
    json_object_foreach(shards, shard, v)
    {
        json_t *load = json_object_get(v, "load"), *received = json_object_get(v, "received");
        if (!json_is_integer(load) || !json_is_integer(received) || json_integer_value(load) < 0 ||
            json_integer_value(received) < 0) {
            gw_error_set(err, "", "receipt: shards.%.64s: load and received must be integers",
                         shard);
            return -EINVAL;
        }
        /* By id, whatever epoch: every shard of a receipt is in its epoch record. */
        gw_ledger_add_id(&s->ledger, shard, strlen(shard), (uint64_t)json_integer_value(load),
                         (uint64_t)json_integer_value(received));
    }
    struct gw_idem_ref ref = {1, rec->receipt_offset, rec->receipt_len, rec->seq};
    int rc = gw_idem_insert(&s->idem, json_string_value(id), json_string_length(id),
                            rec->fingerprint, ref);
    if (rc == -EEXIST)
        gw_error_set(err, "", "receipt: batch_id \"%s\" was already journaled",
                     json_string_value(id));
    else if (rc != 0)
        gw_error_set(err, "", "out of memory");
    return rc == -EEXIST ? -EINVAL : rc;
}

static void log_replay(const struct gw_server *s, const struct gw_journal_repair *rep,
                       int epoch_written)
{
    struct gw_buf f;
    if (rep->torn) {
        gw_buf_init(&f);
        gw_log_str(&f, "file", s->journal.path);
        gw_log_u64(&f, "line", rep->line);
        gw_log_u64(&f, "offset", rep->offset);
        gw_log_u64(&f, "bytes", rep->bytes);
        size_t n = strlen(s->journal.path) + sizeof(GW_JOURNAL_BROKEN_SUFFIX);
        char *moved_to = malloc(n);
        if (moved_to)
            snprintf(moved_to, n, "%s%s", s->journal.path, GW_JOURNAL_BROKEN_SUFFIX);
        gw_log_str(&f, "moved_to", moved_to ? moved_to : "?");
        free(moved_to);
        gw_log_event("journal_torn_tail_repaired", &f);
    }
    gw_buf_init(&f);
    gw_log_str(&f, "file", s->journal.path);
    gw_log_u64(&f, "receipts", s->journal.last_seq);
    gw_log_u64(&f, "bytes", s->journal.size);
    gw_log_bool(&f, "epoch_written", epoch_written);
    gw_log_event("journal_replayed", &f);
}

/* Opens, replays and repairs the journal, then writes the epoch if it changed. */
int gw_server_open_journal(struct gw_server *s, const struct gw_topology *topo)
{
    struct gw_error err;
    struct gw_journal_repair rep;
    int rc = gw_journal_open(&s->journal, s->opt.state_dir, replay_receipt, s, &rep, &err);
    if (rc == -EINVAL) {
        fprintf(stderr, "%s\n", err.msg);
        return GW_EXIT_UNUSABLE;
    }
    int written = 0;
    if (rc == 0)
        rc = gw_journal_write_epoch(&s->journal, topo, &written, &err);
    if (rc != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return GW_EXIT_INTERNAL;
    }
    log_replay(s, &rep, written);
    return GW_EXIT_OK;
}
