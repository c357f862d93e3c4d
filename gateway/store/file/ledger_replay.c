/* The totals a replayed record adds: its shards (epoch record) or its per-shard sums (receipt). */
#include "ledger_replay.h"

#include <errno.h>
#include <string.h>

int gw_ledger_replay_record(struct gw_ledger *l, const struct gw_journal_record *rec,
                            struct gw_error *err)
{
    if (!rec->receipt) { /* an epoch record: its shards are known from now on (GET /v1/shards) */
        if (gw_ledger_register(l, rec->members, NULL) == 0)
            return 0;
        gw_error_set(err, "", "out of memory");
        return -ENOMEM;
    }
    json_t *shards = json_object_get(rec->receipt, "shards");
    if (!json_is_object(shards)) {
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
        if (gw_ledger_add_id(l, rec->epoch_seq, shard, strlen(shard),
                             (uint64_t)json_integer_value(load),
                             (uint64_t)json_integer_value(received)) == -ENOMEM) {
            gw_error_set(err, "", "out of memory");
            return -ENOMEM;
        }
    }
    return 0;
}
