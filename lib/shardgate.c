/* libshardgate (docs/tools.md §13): the gateway's own placement code behind a small C API. */
#include "shardgate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "buf.h"
#include "dispatch.h"
#include "plan.h"
#include "receipt.h"
#include "topology.h"

#define EXPORT __attribute__((visibility("default")))

struct shardgate_topology {
    struct gw_topology t;
};

/* A gateway return code as a status; the message copied when there is an error to fill. */
static shardgate_status fail(shardgate_error *err, int rc, shardgate_status otherwise,
                             const char *msg)
{
    shardgate_status status = rc == -ENOMEM ? SHARDGATE_NO_MEMORY : otherwise;
    if (err) {
        err->status = status;
        snprintf(err->message, sizeof(err->message), "%s",
                 status == SHARDGATE_NO_MEMORY ? "out of memory" : msg);
    }
    return status;
}

/* A NULL where the API needs a pointer: SHARDGATE_INVALID, naming the function and the
 * argument, never a crash (shardgate.h). */
static shardgate_status null_argument(shardgate_error *err, const char *function,
                                      const char *argument)
{
    char msg[120];
    snprintf(msg, sizeof(msg), "%s: %s is NULL", function, argument);
    return fail(err, -EINVAL, SHARDGATE_INVALID, msg);
}

#define NEED(arg)                                                                                  \
    do {                                                                                           \
        if (!(arg))                                                                                \
            return null_argument(err, __func__, #arg);                                             \
    } while (0)

static shardgate_status done(shardgate_error *err)
{
    if (err) {
        err->status = SHARDGATE_OK;
        err->message[0] = '\0';
    }
    return SHARDGATE_OK;
}

EXPORT const char *shardgate_version(void)
{
    return SHARDGATE_LIB_VERSION;
}

static shardgate_status new_topology(shardgate_topology **out, shardgate_error *err)
{
    *out = calloc(1, sizeof(**out));
    return *out ? SHARDGATE_OK : fail(err, -ENOMEM, SHARDGATE_NO_MEMORY, "");
}

EXPORT shardgate_status shardgate_topology_load(const char *contract_path, const char *shards_path,
                                                shardgate_topology **out, shardgate_error *err)
{
    NEED(contract_path);
    NEED(shards_path);
    NEED(out);
    struct gw_error e;
    shardgate_status status = new_topology(out, err);
    if (status != SHARDGATE_OK)
        return status;
    int rc = gw_topology_load(contract_path, shards_path, &(*out)->t, &e);
    if (rc != 0) {
        free(*out);
        *out = NULL;
        /* a file that cannot be opened or read says so in its message: "cannot open/read" */
        return fail(err, rc, strstr(e.msg, "cannot ") ? SHARDGATE_IO : SHARDGATE_INVALID, e.msg);
    }
    return done(err);
}

EXPORT shardgate_status shardgate_topology_parse(const char *contract, size_t contract_len,
                                                 const char *shards, size_t shards_len,
                                                 shardgate_topology **out, shardgate_error *err)
{
    NEED(contract);
    NEED(shards);
    NEED(out);
    struct gw_error e;
    struct gw_contract c;
    struct gw_membership m;
    shardgate_status status = new_topology(out, err);
    if (status != SHARDGATE_OK)
        return status;
    int rc = gw_contract_parse(contract, contract_len, "contract", &c, &e);
    if (rc == 0) {
        rc = gw_membership_parse(shards, shards_len, "shards", &m, &e);
        if (rc == 0)
            rc = gw_topology_build(&c, &m, &(*out)->t, &e); /* takes m over */
    }
    if (rc != 0) {
        free(*out);
        *out = NULL;
        return fail(err, rc, SHARDGATE_INVALID, e.msg);
    }
    return done(err);
}

EXPORT void shardgate_topology_free(shardgate_topology *t)
{
    if (!t)
        return;
    gw_topology_free(&t->t);
    free(t);
}

EXPORT const char *shardgate_ring_id(const shardgate_topology *t)
{
    return t ? ring_id(t->t.ring) : NULL;
}

EXPORT const char *shardgate_epoch_id(const shardgate_topology *t)
{
    return t ? t->t.epoch : NULL;
}

EXPORT shardgate_status shardgate_lookup(const shardgate_topology *t, const void *key, size_t len,
                                         shardgate_placement *out)
{
    shardgate_error *err = NULL; /* lookup has none: the status says it */
    NEED(t);
    if (!key && len != 0)
        return null_argument(err, __func__, "key");
    NEED(out);
    struct ring_placement p;
    if (ring_lookup(t->t.ring, key, len, &p) != 0)
        return SHARDGATE_NO_SHARD;
    *out = (shardgate_placement){ring_shard_id(t->t.ring, p.shard),
                                 ring_shard_id_len(t->t.ring, p.shard),
                                 p.hash,
                                 p.point,
                                 p.vnode,
                                 p.wrapped};
    return SHARDGATE_OK;
}

/* Hands the buffer's bytes to the caller, or fails with no memory. */
static shardgate_status give(struct gw_buf *b, char **out, size_t *out_len, shardgate_error *err)
{
    if (b->failed) {
        gw_buf_free(b);
        return fail(err, -ENOMEM, SHARDGATE_NO_MEMORY, "");
    }
    *out = b->data;
    *out_len = b->len;
    return done(err);
}

EXPORT shardgate_status shardgate_place(const shardgate_topology *t, const char *batch, size_t len,
                                        char **receipt, size_t *receipt_len, shardgate_error *err)
{
    NEED(t);
    NEED(batch);
    NEED(receipt);
    NEED(receipt_len);
    struct gw_batch b;
    struct gw_dispatch d;
    struct gw_error e;
    int rc = gw_batch_parse(batch, len, GW_MAX_CHANGES_DEFAULT, &b, &e);
    if (rc != 0)
        return fail(err, rc, SHARDGATE_INVALID, e.msg);
    rc = gw_dispatch_run(&t->t, &b, &d, &e);
    if (rc != 0) {
        gw_batch_free(&b);
        return fail(err, rc, rc == -ENOENT ? SHARDGATE_NO_SHARD : SHARDGATE_INVALID, e.msg);
    }
    shardgate_status status;
    if (!d.ok && d.over_capacity_shards && t->t.contract.policy == GW_POLICY_REJECT) {
        status = fail(err, -EDOM, SHARDGATE_REFUSED,
                      "over_capacity: the batch puts a shard over its capacity under "
                      "DISPATCH_CAPACITY_POLICY=reject");
    } else {
        struct gw_buf out;
        gw_buf_init(&out);
        gw_receipt_write(&out, &t->t, &b, &d);
        gw_buf_puts(&out, "\n");
        status = give(&out, receipt, receipt_len, err);
    }
    gw_dispatch_free(&d);
    gw_batch_free(&b);
    return status;
}

/* The plan between two topologies as its JSON line, with its ranges or without. */
static shardgate_status plan_json(const shardgate_topology *from, const shardgate_topology *to,
                                  int ranges, char **plan, size_t *plan_len, shardgate_error *err)
{
    struct gw_plan p;
    struct gw_error e;
    int rc = gw_plan_compute(&from->t, &to->t, ranges, &p, &e);
    if (rc != 0)
        return fail(err, rc, rc == -ENOENT ? SHARDGATE_NO_SHARD : SHARDGATE_INVALID, e.msg);
    struct gw_buf out;
    gw_buf_init(&out);
    gw_plan_write(&out, &p);
    gw_buf_puts(&out, "\n");
    gw_plan_free(&p);
    return give(&out, plan, plan_len, err);
}

EXPORT shardgate_status shardgate_plan(const shardgate_topology *from, const shardgate_topology *to,
                                       char **plan, size_t *plan_len, shardgate_error *err)
{
    NEED(from);
    NEED(to);
    NEED(plan);
    NEED(plan_len);
    return plan_json(from, to, 0, plan, plan_len, err);
}

EXPORT shardgate_status shardgate_moves(const shardgate_topology *from,
                                        const shardgate_topology *to, char **moves,
                                        size_t *moves_len, shardgate_error *err)
{
    NEED(from);
    NEED(to);
    NEED(moves);
    NEED(moves_len);
    return plan_json(from, to, 1, moves, moves_len, err);
}

EXPORT void shardgate_free(void *p)
{
    free(p);
}
