/* The one apply path of a membership change (docs/api.md §15, docs/journal.md §11): SIGHUP and
 * PUT /v1/admin/membership validate, build the new ring off the request path while a PUT's
 * shards file is staged, journal and sync the epoch record through the journal writer, install
 * the file, then publish the view. Refused or failed: every file and the view as before. */
#include "request.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "crashpoint.h"
#include "if_match.h"
#include "log.h"
#include "plan.h"
#include "ring_svg.h"

static int has_online(const struct gw_membership *m)
{
    for (size_t i = 0; i < m->count; i++)
        if (m->shards[i].state == GW_STATE_ONLINE)
            return 1;
    return 0;
}

/* What the change would do against the current view: refused, unchanged or to apply. */
static int decide(const struct gw_view *cur, const struct gw_contract *contract,
                  const struct gw_membership *members, struct gw_reload *rl, struct gw_error *err)
{
    char next[GW_EPOCH_HEX_LEN + 1];
    if (rl->if_match && !gw_if_match_matches(rl->if_match, cur->topo.epoch)) {
        rl->stale = 1;
        gw_error_set(err, "", "If-Match %.100s does not name the current epoch \"%s\"",
                     rl->if_match, cur->topo.epoch);
        return -ESTALE;
    }
    if (!has_online(members)) {
        rl->no_online = 1;
        gw_error_set(err, "", "no online shard: the membership would leave the ring empty");
        return -EINVAL;
    }
    int rc = gw_epoch_id(contract, members, next, err);
    if (rc == 0)
        rl->verdict = strcmp(next, cur->topo.epoch) == 0 ? GW_RELOAD_UNCHANGED : GW_RELOAD_APPLIED;
    return rc;
}

/* The movement plan from the current view to `next` (docs/contract.md §8): answered for a dry
 * run, and checked against max_movement. Returns 0, -EDOM past the limit, or as the plan. */
static int check_plan(const struct gw_view *cur, const struct gw_topology *next,
                      struct gw_reload *rl, struct gw_error *err)
{
    struct gw_plan plan;
    int rc = gw_plan_compute(&cur->topo, next, 0, &plan, err);
    if (rc != 0)
        return rc;
    double moved = gw_plan_fraction(&plan);
    if (!rl->dry_run && rl->max_movement >= 0 && moved > rl->max_movement && !rl->force) {
        rl->exceeded = 1;
        gw_error_set(err, "",
                     "the change moves %.9f of the hash space, more than max_movement "
                     "%.9f (add force=1 to apply it anyway)",
                     moved, rl->max_movement);
        rc = -EDOM;
    }
    if (rl->dry_run && rl->svg)
        rc = gw_ring_svg_moves(rl->plan, &cur->topo, next);
    else if (rl->dry_run || rl->exceeded)
        gw_plan_write(rl->plan, &plan);
    gw_plan_free(&plan);
    return rc;
}

/* A store that takes no record (the journal failed): the change touches no file. 0 or -EIO. */
static int store_refuses(struct gw_server *s, struct gw_error *err)
{
    if (gw_store_writable(s->store))
        return 0;
    struct gw_store_refusal why;
    gw_store_refusal(s->store, &why);
    *err = why.error;
    return -EIO;
}

static int shards_error(struct gw_server *s, int rc, struct gw_error *err)
{
    gw_error_set(err, "", "shards: %s: cannot replace: %s", s->opt.shards, strerror(-rc));
    return rc;
}

/* The epoch record is durable and the PUT's file could not be put in place: the epoch in force is
 * recorded again after it, so the journal, the file and the view name one membership. A failure
 * here leaves the store failed (unready): the next start reads the file, the old membership. */
static void record_back(struct gw_server *s, const struct gw_view *cur, const char *failed,
                        struct gw_reload *rl)
{
    struct gw_error ignored;
    struct gw_epoch_entry back;
    if (gw_store_record_epoch(s->store, &cur->topo, rl->source, failed, &back, &ignored) == 0)
        atomic_store(&s->metrics.epoch_seq, back.epoch_seq);
}

/* Records the epoch of `next` (taken over) and publishes it, in the order of docs/journal.md §11:
 * the PUT's file `staged` (synced under its temporary name), the epoch record durable, the file
 * installed, the view published. Each failure leaves every file and the view as before. */
static int switch_to(struct gw_server *s, struct gw_view *cur, struct gw_topology *next_in,
                     struct gw_reload *rl, struct gw_shards_write *staged, struct gw_error *err)
{
    struct gw_topology next = *next_in;
    memset(next_in, 0, sizeof(*next_in));
    int rc = store_refuses(s, err);
    if (rc == 0 && staged && (rc = gw_shards_write_wait(staged)) != 0)
        shards_error(s, rc, err);
    if (rc == 0) {
        gw_crash_point("shards-staged");
        rc = gw_store_record_epoch(s->store, &next, rl->source, cur->topo.epoch, &rl->entry, err);
        rl->stale = rc == -ESTALE;
    }
    if (rc == 0) {
        gw_crash_point("epoch-recorded");
        if (staged && (rc = gw_shards_write_install(staged)) != 0) {
            shards_error(s, rc, err);
            record_back(s, cur, next.epoch, rl);
        }
    }
    struct gw_view *v;
    if (rc == 0) {
        gw_crash_point("shards-installed");
        rc = gw_view_new(&s->views, &next, rl->entry.epoch_seq, gw_store_ledger(s->store), &v, err);
    } else {
        gw_topology_free(&next);
    }
    if (rc == 0) {
        gw_view_publish(&s->views, v);
        atomic_store(&s->metrics.epoch_seq, rl->entry.epoch_seq);
    }
    return rc;
}

/* A reload's outcome, SIGHUP's or a PUT's: counted in shardgate_reloads_total and logged as one
 * event (docs/api.md §15). */
static void reload_outcome(struct gw_server *s, const struct gw_reload *rl, int rc,
                           const struct gw_error *err)
{
    gw_metrics_reload(&s->metrics, rc != 0                              ? GW_RELOAD_RESULT_REFUSED
                                   : rl->verdict == GW_RELOAD_UNCHANGED ? GW_RELOAD_RESULT_UNCHANGED
                                                                        : GW_RELOAD_RESULT_APPLIED);
    struct gw_buf f;
    gw_buf_init(&f);
    gw_log_str(&f, "source", gw_source_name(rl->source));
    gw_log_str(&f, "epoch", rl->entry.epoch);
    gw_log_u64(&f, "epoch_seq", rl->entry.epoch_seq);
    if (rc != 0)
        gw_log_str(&f, "message", err->msg);
    gw_log_event(rc != 0                              ? "reload_refused"
                 : rl->verdict == GW_RELOAD_UNCHANGED ? "reload_unchanged"
                                                      : "reload_applied",
                 &f);
}

void gw_reload_refused(struct gw_server *s, enum gw_epoch_source source, const struct gw_error *err)
{
    struct gw_reload rl = {.source = source, .verdict = GW_RELOAD_REFUSED};
    gw_chain_latest(gw_store_chain(s->store), &rl.entry);
    reload_outcome(s, &rl, -EINVAL, err);
}

/* The apply path under reload_lock: `contract` is SIGHUP's, or NULL for the contract in force. */
static int apply_locked(struct gw_server *s, const struct gw_contract *contract,
                        struct gw_membership *members, struct gw_reload *rl, struct gw_error *err)
{
    int rc = gw_serve_catch_up(s, err);
    struct gw_view *cur = gw_view_acquire(&s->views);
    if (!contract)
        contract = &cur->topo.contract;
    rl->verdict = GW_RELOAD_REFUSED;
    struct gw_topology next;
    memset(&next, 0, sizeof(next));
    if (rc == 0)
        rc = decide(cur, contract, members, rl, err);
    /* The PUT's file is staged while the ring is built; installed only after the record. */
    struct gw_shards_write staged;
    int stage = rc == 0 && rl->verdict == GW_RELOAD_APPLIED && rl->shards_text && !rl->dry_run &&
                gw_store_writable(s->store) && !gw_store_holds_membership(s->store);
    if (stage)
        gw_shards_write_start(&staged, s->opt.shards, rl->shards_text, rl->shards_len);
    if (rc == 0 && (rl->verdict == GW_RELOAD_APPLIED || rl->dry_run)) /* off the request path */
        rc = gw_topology_build_from(contract, members, cur->topo.ring, &next, err);
    /* The membership in force again changes nothing, whatever the parameters: no plan. */
    if (rc == 0 && (rl->dry_run || (rl->max_movement >= 0 && rl->verdict == GW_RELOAD_APPLIED)))
        rc = check_plan(cur, &next, rl, err);
    if (rc == 0 && !rl->dry_run && rl->verdict == GW_RELOAD_APPLIED)
        rc = switch_to(s, cur, &next, rl, stage ? &staged : NULL, err);
    if (stage) /* refused, failed or installed: no temporary file stays */
        gw_shards_write_abandon(&staged);
    if (next.ring)
        gw_topology_free(&next);
    if (rc != 0)
        rl->verdict = GW_RELOAD_REFUSED;
    if (rl->verdict != GW_RELOAD_APPLIED)
        gw_chain_latest(gw_store_chain(s->store), &rl->entry);
    gw_view_unref(cur);
    return rc;
}

int gw_reload_apply(struct gw_server *s, struct gw_membership *members, struct gw_reload *rl,
                    struct gw_error *err)
{
    pthread_mutex_lock(&s->reload_lock);
    int rc = apply_locked(s, NULL, members, rl, err);
    pthread_mutex_unlock(&s->reload_lock);
    gw_membership_free(members);
    if (!rl->dry_run && !rl->stale) /* a stale If-Match is the client's, not a reload */
        reload_outcome(s, rl, rc, err);
    return rc;
}

/* SIGHUP's documents, read under reload_lock so that no change applied meanwhile is reverted by
 * files read before it. Returns 0 with both loaded, or as the loaders with err set. */
static int read_files(struct gw_server *s, struct gw_contract *contract,
                      struct gw_membership *members, struct gw_error *err)
{
    int rc = gw_contract_load(s->opt.conf, contract, err);
    if (rc == 0)
        rc = gw_membership_load(s->opt.shards, members, err);
    if (rc == 0 && (rc = gw_membership_check_ring(members, contract, s->opt.shards, err)) != 0)
        gw_membership_free(members);
    return rc;
}

void gw_reload_from_files(struct gw_server *s)
{
    struct gw_error err;
    struct gw_reload rl = {.source = GW_SOURCE_SIGHUP, .max_movement = -1};
    struct gw_contract contract;
    struct gw_membership members;
    pthread_mutex_lock(&s->reload_lock);
    int rc = read_files(s, &contract, &members, &err);
    if (rc == 0) {
        rc = apply_locked(s, &contract, &members, &rl, &err);
        gw_membership_free(&members);
    } else {
        rl.verdict = GW_RELOAD_REFUSED;
        gw_chain_latest(gw_store_chain(s->store), &rl.entry);
    }
    pthread_mutex_unlock(&s->reload_lock);
    reload_outcome(s, &rl, rc, &err);
}
