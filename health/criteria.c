/* The criteria table (docs/operations.md §1.3): every fact of a receipt or journal, judged. */
/* Issue format: "<criterion>: <subject>: <detail>", subject = batch_id, "epoch@line N" or
 * "journal"; details name the field and say "expected X, got Y". */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "chain.h"
#include "rules.h"
#include "verify.h"

#define HC_I64 "%" PRId64
#define HC_U64 "%" PRIu64

/* Printable prefix of a borrowed string (cut at 128 bytes or a NUL). */
#define HC_S(s) (int)((s).n < 128 ? (s).n : 128), (s).p

static int hc_str_is(struct hc_str s, const char *p, size_t n)
{
    return s.n == n && memcmp(s.p, p, n) == 0;
}

/* --- receipt scope: the ring ------------------------------------------------------------- */

static void hc_c_receipt_version(struct hc_run *run)
{
    hc_run_count(run, 1);
    if (run->r->version != 1 && run->r->version != 2)
        hc_run_fail(run, "receipt_version: expected 1 or 2, got " HC_I64, run->r->version);
}

/* A version-2 receipt names the epoch it was placed with: the epoch id recomputed from the
 * contract + membership it is judged against (docs/contract.md §7). A version-1 receipt has
 * no epoch to judge, so this criterion does not run for it. */
static void hc_c_epoch(struct hc_run *run)
{
    if (run->r->epoch.p == NULL)
        return;
    hc_run_count(run, 1);
    if (!hc_str_eq(run->r->epoch, run->ep->epoch_id))
        hc_run_fail(run, "epoch: expected %s, got %.*s", run->ep->epoch_id, HC_S(run->r->epoch));
}

static void hc_c_ring_contract(struct hc_run *run)
{
    const struct hc_receipt *r = run->r;
    const struct hc_contract *c = &run->ep->contract;
    hc_run_count(run, 1);
    if (!hc_str_eq(r->algorithm, hc_ring_name(c->ring)))
        hc_run_fail(run, "ring.algorithm: expected %s, got %.*s", hc_ring_name(c->ring),
                    HC_S(r->algorithm));
    if (!hc_str_eq(r->hash, hc_hash_name(c->hash)))
        hc_run_fail(run, "ring.hash: expected %s, got %.*s", hc_hash_name(c->hash), HC_S(r->hash));
    if (c->ring != HC_RING_KETAMA && r->table_form && r->table != (int64_t)c->table)
        hc_run_fail(run, "ring.table: expected %u, got " HC_I64, c->table, r->table);
    if (c->ring == HC_RING_KETAMA && !r->table_form && r->vnodes != (int64_t)c->vnodes)
        hc_run_fail(run, "ring.vnodes: expected %u, got " HC_I64, c->vnodes, r->vnodes);
}

/* 1 when the receipt has the form of its contract's algorithm (ring_contract reports it when
 * not): the criteria of one form's fields judge only receipts of that form. */
static int hc_same_form(const struct hc_run *run)
{
    return run->r->table_form == (run->ep->contract.ring != HC_RING_KETAMA);
}

/* Writes the ids as "a,b,c" (shortened with "..." when long). */
static void hc_join_online(const struct hc_membership *m, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < m->n; i++) {
        if (m->shards[i].state != HC_STATE_ONLINE)
            continue;
        int w = snprintf(out + n, cap - n, "%s%s", n ? "," : "", m->shards[i].id);
        if (w < 0 || (size_t)w >= cap - n) {
            snprintf(out + (cap > 4 ? cap - 4 : 0), 4, "...");
            return;
        }
        n += (size_t)w;
    }
}

static void hc_join_strs(const struct hc_str *s, size_t k, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < k; i++) {
        int w = snprintf(out + n, cap - n, "%s%.*s", n ? "," : "", HC_S(s[i]));
        if (w < 0 || (size_t)w >= cap - n) {
            snprintf(out + (cap > 4 ? cap - 4 : 0), 4, "...");
            return;
        }
        n += (size_t)w;
    }
}

static void hc_c_ring_online(struct hc_run *run)
{
    const struct hc_receipt *r = run->r;
    const struct hc_membership *m = &run->ep->members;
    hc_run_count(run, 1);
    size_t k = 0;
    int same = 1;
    for (size_t i = 0; i < m->n; i++) {
        if (m->shards[i].state != HC_STATE_ONLINE) /* a whitelist: only online is in the ring */
            continue;
        if (k >= r->n_online || !hc_str_is(r->online[k], m->shards[i].id, m->shards[i].id_len))
            same = 0;
        k++;
    }
    if (!same || k != r->n_online) {
        char want[512], got[512];
        hc_join_online(m, want, sizeof want);
        hc_join_strs(r->online, r->n_online, got, sizeof got);
        hc_run_fail(run, "ring.online: expected [%s], got [%s]", want, got);
    }
}

static void hc_c_vnodes_total(struct hc_run *run)
{
    if (run->r->table_form || !hc_same_form(run))
        return; /* a table has slots, not points (ring_contract judges them) */
    hc_run_count(run, 1);
    uint64_t want = run->ep->ring.vnodes_total;
    if (run->r->vnodes_total < 0 || (uint64_t)run->r->vnodes_total != want)
        hc_run_fail(run, "ring.vnodes_total: expected " HC_U64 ", got " HC_I64, want,
                    run->r->vnodes_total);
}

static void hc_c_ring_id(struct hc_run *run)
{
    hc_run_count(run, 1);
    if (!hc_str_eq(run->r->ring_id, run->ep->ring_id))
        hc_run_fail(run, "ring.id: expected %s, got %.*s", run->ep->ring_id, HC_S(run->r->ring_id));
}

/* --- receipt scope: placements ----------------------------------------------------------- */

static void hc_c_placement_count(struct hc_run *run)
{
    hc_run_count(run, 1);
    if (run->r->changes < 0 || (uint64_t)run->r->changes != run->r->n_pl)
        hc_run_fail(run, "placements: expected one per change (counts.changes " HC_I64 "), got %zu",
                    run->r->changes, run->r->n_pl);
}

static int hc_str_same(struct hc_str a, struct hc_str b)
{
    return a.n == b.n && memcmp(a.p, b.p, a.n) == 0;
}

static int hc_idkey_cmp(const void *pa, const void *pb)
{
    const struct hc_idkey *a = pa, *b = pb;
    if (a->h != b->h)
        return a->h < b->h ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

static void hc_c_placement_ids(struct hc_run *run)
{
    const struct hc_receipt *r = run->r;
    struct hc_idkey *keys = run->d->ids;
    hc_run_count(run, 1);
    /* Sort (FNV-1a of the id, index); equal ids sit in one run of equal hashes. */
    for (size_t i = 0; i < r->n_pl; i++) {
        uint64_t h = 1469598103934665603ULL;
        for (size_t b = 0; b < r->pl[i].id.n; b++)
            h = (h ^ (unsigned char)r->pl[i].id.p[b]) * 1099511628211ULL;
        keys[i].h = h;
        keys[i].i = i;
    }
    qsort(keys, r->n_pl, sizeof *keys, hc_idkey_cmp);
    for (size_t a = 0; a < r->n_pl; a++) {
        for (size_t b = a + 1; b < r->n_pl && keys[b].h == keys[a].h; b++) {
            size_t x = keys[a].i, y = keys[b].i;
            if (hc_str_same(r->pl[x].id, r->pl[y].id))
                hc_run_fail(run,
                            "%.*s id: duplicate change id (placements[%zu] and placements[%zu])",
                            HC_S(r->pl[x].id), x, y);
        }
    }
}

static void hc_c_placement_hash(struct hc_run *run)
{
    const struct hc_receipt *r = run->r;
    if (r->table_form || !hc_same_form(run))
        return; /* a table's placement names its slot, not a hash */
    hc_run_count(run, r->n_pl);
    for (size_t i = 0; i < r->n_pl; i++)
        if (r->pl[i].hash != (int64_t)run->d->hash[i])
            hc_run_fail(run, "%.*s hash: expected %" PRIu32 ", got " HC_I64, HC_S(r->pl[i].id),
                        run->d->hash[i], r->pl[i].hash);
}

static void hc_c_placement_point(struct hc_run *run)
{
    const struct hc_receipt *r = run->r;
    if (!hc_same_form(run))
        return;
    hc_run_count(run, r->n_pl);
    if (run->d->ring_empty)
        return;                                          /* placement_shard reports it */
    const char *what = r->table_form ? "slot" : "point"; /* a table's slot (docs/contract.md §11) */
    for (size_t i = 0; i < r->n_pl; i++)
        if (r->pl[i].point != (int64_t)run->d->hit[i].point)
            hc_run_fail(run, "%.*s %s: expected %" PRIu32 ", got " HC_I64, HC_S(r->pl[i].id), what,
                        run->d->hit[i].point, r->pl[i].point);
}

static void hc_c_placement_vnode(struct hc_run *run)
{
    const struct hc_receipt *r = run->r;
    if (r->table_form || !hc_same_form(run))
        return;
    hc_run_count(run, r->n_pl);
    if (run->d->ring_empty)
        return;
    for (size_t i = 0; i < r->n_pl; i++)
        if (r->pl[i].vnode != (int64_t)run->d->hit[i].vnode)
            hc_run_fail(run, "%.*s vnode: expected %" PRIu32 ", got " HC_I64, HC_S(r->pl[i].id),
                        run->d->hit[i].vnode, r->pl[i].vnode);
}

static void hc_c_placement_shard(struct hc_run *run)
{
    const struct hc_receipt *r = run->r;
    const struct hc_membership *m = &run->ep->members;
    hc_run_count(run, r->n_pl);
    for (size_t i = 0; i < r->n_pl; i++) {
        if (run->d->ring_empty) {
            hc_run_fail(run, "%.*s shard: no shard is online, nothing can be placed, got %.*s",
                        HC_S(r->pl[i].id), HC_S(r->pl[i].shard));
            continue;
        }
        const struct hc_shard *want = &m->shards[run->d->hit[i].shard];
        if (!hc_str_is(r->pl[i].shard, want->id, want->id_len))
            hc_run_fail(run, "%.*s shard: expected %s, got %.*s", HC_S(r->pl[i].id), want->id,
                        HC_S(r->pl[i].shard));
    }
}

/* A spilled placement names its home shard after `reason`; no other placement has `home`
 * (docs/contract.md §9). */
static void hc_placement_home(struct hc_run *run, size_t i)
{
    const struct hc_rplacement *p = &run->r->pl[i];
    long h = run->d->home[i];
    if (h < 0 && p->home.p != NULL)
        hc_run_fail(run, "%.*s home: expected no home (the change did not spill), got %.*s",
                    HC_S(p->id), HC_S(p->home));
    else if (h >= 0 && p->home.p == NULL)
        hc_run_fail(run, "%.*s home: expected %s, got none", HC_S(p->id),
                    run->ep->members.shards[h].id);
    else if (h >= 0 && !hc_str_eq(p->home, run->ep->members.shards[h].id))
        hc_run_fail(run, "%.*s home: expected %s, got %.*s", HC_S(p->id),
                    run->ep->members.shards[h].id, HC_S(p->home));
}

static void hc_c_placement_reason(struct hc_run *run)
{
    const struct hc_receipt *r = run->r;
    hc_run_count(run, r->n_pl);
    if (run->d->ring_empty)
        return;
    for (size_t i = 0; i < r->n_pl; i++) {
        const char *want = run->ep->contract.ring != HC_RING_KETAMA ? "table"
                           : run->d->home[i] >= 0                   ? "spill"
                           : run->d->hit[i].wrap                    ? "wrap"
                                                                    : "ring";
        if (!hc_str_eq(r->pl[i].reason, want))
            hc_run_fail(run, "%.*s reason: expected %s, got %.*s", HC_S(r->pl[i].id), want,
                        HC_S(r->pl[i].reason));
        hc_placement_home(run, i);
    }
}

static void hc_c_placement_online(struct hc_run *run)
{
    const struct hc_receipt *r = run->r;
    const struct hc_membership *m = &run->ep->members;
    hc_run_count(run, r->n_pl);
    for (size_t i = 0; i < r->n_pl; i++) {
        long s = hc_membership_find(m, r->pl[i].shard.p, r->pl[i].shard.n);
        if (s < 0)
            hc_run_fail(run, "%.*s shard: %.*s is not in the membership", HC_S(r->pl[i].id),
                        HC_S(r->pl[i].shard));
        else if (m->shards[s].state != HC_STATE_ONLINE)
            hc_run_fail(run, "%.*s shard: %s is %s, not online", HC_S(r->pl[i].id), m->shards[s].id,
                        hc_state_name(m->shards[s].state));
    }
}

/* --- receipt scope: shards --------------------------------------------------------------- */

static void hc_c_shard_members(struct hc_run *run)
{
    const struct hc_receipt *r = run->r;
    const struct hc_membership *m = &run->ep->members;
    hc_run_count(run, 1);
    for (size_t i = 0; i < m->n; i++) {
        size_t j = 0;
        while (j < r->n_sh && !hc_str_is(r->sh[j].id, m->shards[i].id, m->shards[i].id_len))
            j++;
        if (j == r->n_sh)
            hc_run_fail(run, "shards: missing %s", m->shards[i].id);
    }
    for (size_t j = 0; j < r->n_sh; j++) {
        if (hc_membership_find(m, r->sh[j].id.p, r->sh[j].id.n) < 0)
            hc_run_fail(run, "shards: unexpected %.*s (not in the membership)", HC_S(r->sh[j].id));
        else if (j > 0 &&
                 hc_id_cmp(r->sh[j - 1].id.p, r->sh[j - 1].id.n, r->sh[j].id.p, r->sh[j].id.n) > 0)
            hc_run_fail(run, "shards: %.*s out of id order", HC_S(r->sh[j].id));
    }
}

/* Per-shard criteria look at each receipt shard the membership knows (shard_members reports
 * the others): returns its membership index and counts one evaluation, or -1. */
static long hc_known_shard(struct hc_run *run, size_t j)
{
    long s = hc_membership_find(&run->ep->members, run->r->sh[j].id.p, run->r->sh[j].id.n);
    if (s >= 0)
        hc_run_count(run, 1);
    return s;
}

static void hc_c_shard_state(struct hc_run *run)
{
    const struct hc_membership *m = &run->ep->members;
    for (size_t j = 0; j < run->r->n_sh; j++) {
        long s = hc_known_shard(run, j);
        if (s < 0)
            continue;
        const struct hc_rshard *rs = &run->r->sh[j];
        const char *want = hc_state_name(m->shards[s].state);
        if (!hc_str_eq(rs->state, want))
            hc_run_fail(run, "shards.%s.state: expected %s, got %.*s", m->shards[s].id, want,
                        HC_S(rs->state));
    }
}

static void hc_c_shard_weight(struct hc_run *run)
{
    const struct hc_membership *m = &run->ep->members;
    for (size_t j = 0; j < run->r->n_sh; j++) {
        long s = hc_known_shard(run, j);
        if (s < 0)
            continue;
        const struct hc_rshard *rs = &run->r->sh[j];
        if (rs->weight != (int64_t)m->shards[s].weight)
            hc_run_fail(run, "shards.%s.weight: expected %u, got " HC_I64, m->shards[s].id,
                        m->shards[s].weight, rs->weight);
    }
}

static void hc_c_shard_capacity(struct hc_run *run)
{
    const struct hc_membership *m = &run->ep->members;
    for (size_t j = 0; j < run->r->n_sh; j++) {
        long s = hc_known_shard(run, j);
        if (s < 0)
            continue;
        const struct hc_rshard *rs = &run->r->sh[j];
        if (rs->capacity != m->shards[s].capacity)
            hc_run_fail(run, "shards.%s.capacity: expected " HC_I64 ", got " HC_I64,
                        m->shards[s].id, m->shards[s].capacity, rs->capacity);
    }
}

static void hc_c_shard_load(struct hc_run *run)
{
    const struct hc_membership *m = &run->ep->members;
    for (size_t j = 0; j < run->r->n_sh; j++) {
        long s = hc_known_shard(run, j);
        if (s < 0)
            continue;
        const struct hc_rshard *rs = &run->r->sh[j];
        if (rs->load < 0 || (uint64_t)rs->load != run->d->load[s])
            hc_run_fail(run, "shards.%s.load: expected " HC_U64 " (sum of sizes), got " HC_I64,
                        m->shards[s].id, run->d->load[s], rs->load);
    }
}

static void hc_c_shard_received(struct hc_run *run)
{
    const struct hc_membership *m = &run->ep->members;
    for (size_t j = 0; j < run->r->n_sh; j++) {
        long s = hc_known_shard(run, j);
        if (s < 0)
            continue;
        const struct hc_rshard *rs = &run->r->sh[j];
        if (rs->received < 0 || (uint64_t)rs->received != run->d->received[s])
            hc_run_fail(run, "shards.%s.received: expected " HC_U64 ", got " HC_I64,
                        m->shards[s].id, run->d->received[s], rs->received);
    }
}

static void hc_c_shard_over_capacity(struct hc_run *run)
{
    const struct hc_membership *m = &run->ep->members;
    for (size_t j = 0; j < run->r->n_sh; j++) {
        long s = hc_known_shard(run, j);
        if (s < 0)
            continue;
        const struct hc_rshard *rs = &run->r->sh[j];
        if (rs->over_capacity != run->d->over[s])
            hc_run_fail(run, "shards.%s.over_capacity: expected %s, got %s", m->shards[s].id,
                        run->d->over[s] ? "true" : "false", rs->over_capacity ? "true" : "false");
    }
}

/* --- receipt scope: totals --------------------------------------------------------------- */

static void hc_c_capacity(struct hc_run *run)
{
    const struct hc_membership *m = &run->ep->members;
    uint64_t want = 0;
    for (size_t i = 0; i < m->n; i++) {
        uint64_t c = (uint64_t)m->shards[i].capacity;
        if (m->shards[i].state == HC_STATE_ONLINE)
            want = want > UINT64_MAX - c ? UINT64_MAX : want + c;
    }
    hc_run_count(run, 1);
    if (run->r->capacity < 0 || (uint64_t)run->r->capacity != want)
        hc_run_fail(run, "capacity: expected " HC_U64 " (sum over online shards), got " HC_I64,
                    want, run->r->capacity);
}

static void hc_c_counts(struct hc_run *run)
{
    const struct hc_receipt *r = run->r;
    hc_run_count(run, 1);
    int64_t placed = run->d->ring_empty ? 0 : (int64_t)r->n_pl;
    if (r->changes != (int64_t)r->n_pl)
        hc_run_fail(run, "counts.changes: expected %zu, got " HC_I64, r->n_pl, r->changes);
    if (r->dispatched != placed)
        hc_run_fail(run, "counts.dispatched: expected " HC_I64 ", got " HC_I64, placed,
                    r->dispatched);
    if (r->over_capacity_shards < 0 || (uint64_t)r->over_capacity_shards != run->d->over_count)
        hc_run_fail(run, "counts.over_capacity_shards: expected " HC_U64 ", got " HC_I64,
                    run->d->over_count, r->over_capacity_shards);
    int spill = run->ep->contract.policy == HC_POLICY_SPILL; /* docs/contract.md §9 rule 4 */
    if (spill && !r->has_spilled)
        hc_run_fail(run, "counts.spilled: expected " HC_U64 ", got none", run->d->spilled);
    else if (!spill && r->has_spilled)
        hc_run_fail(run, "counts.spilled: expected none (policy %s), got " HC_I64,
                    hc_policy_name(run->ep->contract.policy), r->spilled);
    else if (spill && (r->spilled < 0 || (uint64_t)r->spilled != run->d->spilled))
        hc_run_fail(run, "counts.spilled: expected " HC_U64 ", got " HC_I64, run->d->spilled,
                    r->spilled);
}

static void hc_c_capacity_policy(struct hc_run *run)
{
    hc_run_count(run, 1);
    enum hc_policy policy = run->ep->contract.policy; /* spill refuses as reject does */
    if (policy != HC_POLICY_REPORT && run->d->over_count > 0)
        hc_run_fail(run,
                    "counts.over_capacity_shards: " HC_U64 " shard(s) over capacity in an "
                    "accepted batch under DISPATCH_CAPACITY_POLICY=%s",
                    run->d->over_count, hc_policy_name(policy));
}

static void hc_c_ok(struct hc_run *run)
{
    hc_run_count(run, 1);
    if (run->r->ok != run->d->ok)
        hc_run_fail(run, "ok: expected %s, got %s", run->d->ok ? "true" : "false",
                    run->r->ok ? "true" : "false");
}

/* --- journal record scope ---------------------------------------------------------------- */

static void hc_c_journal_seq(struct hc_run *run)
{
    const struct hc_record *rec = run->rec;
    hc_run_count(run, 1);
    if (rec->seq <= rec->prev_seq)
        hc_run_fail(run, "seq: " HC_I64 " is not greater than the previous seq " HC_I64, rec->seq,
                    rec->prev_seq);
    else if (rec->seq != rec->prev_seq + 1)
        hc_run_fail(run, "seq: expected " HC_I64 ", got " HC_I64 " (receipts missing)",
                    rec->prev_seq + 1, rec->seq);
}

static void hc_c_journal_epoch(struct hc_run *run)
{
    const struct hc_record *rec = run->rec;
    int v2 = run->r->epoch.p != NULL;
    struct hc_str name = v2 ? run->r->epoch : run->r->ring_id;
    const char *what = v2 ? "epoch" : "ring.id";
    hc_run_count(run, 1);
    switch (rec->match) {
    case HC_MATCH_KNOWN:
        if (!rec->named->usable)
            hc_run_fail(run, "%s: the epoch record it names (line %ld) is unusable", what,
                        rec->named->line);
        break;
    case HC_MATCH_NONE:
        hc_run_fail(run, "%s: %.*s matches no earlier epoch record", what, HC_S(name));
        break;
    default:
        hc_run_fail(run, "%s: no epoch record precedes this receipt", what);
        break;
    }
}

static void hc_c_fingerprint(struct hc_run *run)
{
    char want[65];
    hc_run_count(run, 1);
    struct hc_str fp = run->rec->fingerprint;
    if (fp.n != 64 || strspn(fp.p, "0123456789abcdef") < 64) {
        hc_run_fail(run, "fingerprint: must be 64 lowercase hex digits, got %.*s", HC_S(fp));
        return;
    }
    if (hc_fingerprint(run->v->sha256, run->r, want) != 0) {
        hc_run_fail(run, "fingerprint: SHA-256 failed");
        return;
    }
    if (!hc_str_eq(run->rec->fingerprint, want))
        hc_run_fail(run, "fingerprint: expected %s (canonical batch), got %.*s", want,
                    HC_S(run->rec->fingerprint));
}

static void hc_c_journal_batch_unique(struct hc_run *run)
{
    hc_run_count(run, 1);
    if (run->rec->duplicate_of_line > 0)
        hc_run_fail(run, "batch_id: already journaled on line %ld", run->rec->duplicate_of_line);
}

/* --- epoch and journal scope ------------------------------------------------------------- */

static void hc_c_epoch_ring_id(struct hc_run *run)
{
    hc_run_count(run, 1);
    if (run->ep->usable && strcmp(run->ep->recorded_id, run->ep->ring_id) != 0)
        hc_run_fail(run, "ring_id: expected %s (recomputed from the recorded membership), got %s",
                    run->ep->ring_id, run->ep->recorded_id);
}

static void hc_c_epoch_current(struct hc_run *run)
{
    const struct hc_epoch *e = run->end->latest, *own = run->end->own;
    hc_run_count(run, 1);
    if (e == NULL) {
        hc_run_fail(run, "epoch: no epoch record in the journal");
        return;
    }
    if (!e->usable) {
        hc_run_fail(run, "epoch: the latest epoch record (line %ld) is unusable", e->line);
        return;
    }
    if (strcmp(e->epoch_id, own->epoch_id) != 0)
        hc_run_fail(run, "epoch: the latest epoch record (line %ld) is %s, the files read are %s",
                    e->line, e->epoch_id, own->epoch_id);
    const struct hc_contract *a = &e->contract, *b = &own->contract;
    if (a->ring != b->ring)
        hc_run_fail(run, "epoch@line %ld DISPATCH_HASH_RING: journal %s, contract %s", e->line,
                    hc_ring_name(a->ring), hc_ring_name(b->ring));
    if (a->table != b->table)
        hc_run_fail(run, "epoch@line %ld %s: journal %u, contract %u", e->line, hc_size_key(b),
                    a->table, b->table);
    if (a->vnodes != b->vnodes)
        hc_run_fail(run, "epoch@line %ld DISPATCH_VNODES: journal %u, contract %u", e->line,
                    a->vnodes, b->vnodes);
    if (a->hash != b->hash)
        hc_run_fail(run, "epoch@line %ld DISPATCH_RING_HASH: journal %s, contract %s", e->line,
                    hc_hash_name(a->hash), hc_hash_name(b->hash));
    if (a->policy != b->policy)
        hc_run_fail(run, "epoch@line %ld DISPATCH_CAPACITY_POLICY: journal %s, contract %s",
                    e->line, hc_policy_name(a->policy), hc_policy_name(b->policy));
    const struct hc_membership *ma = &e->members, *mb = &own->members;
    for (size_t i = 0; i < ma->n; i++) {
        const struct hc_shard *x = &ma->shards[i];
        long j = hc_membership_find(mb, x->id, x->id_len);
        if (j < 0) {
            hc_run_fail(run, "epoch@line %ld shards: %s is in the journal, not in the shards file",
                        e->line, x->id);
            continue;
        }
        const struct hc_shard *y = &mb->shards[j];
        if (x->state != y->state)
            hc_run_fail(run, "epoch@line %ld shards.%s.state: journal %s, shards file %s", e->line,
                        x->id, hc_state_name(x->state), hc_state_name(y->state));
        if (x->capacity != y->capacity)
            hc_run_fail(
                run, "epoch@line %ld shards.%s.capacity: journal " HC_I64 ", shards file " HC_I64,
                e->line, x->id, x->capacity, y->capacity);
        if (x->weight != y->weight)
            hc_run_fail(run, "epoch@line %ld shards.%s.weight: journal %u, shards file %u", e->line,
                        x->id, x->weight, y->weight);
    }
    for (size_t j = 0; j < mb->n; j++)
        if (hc_membership_find(ma, mb->shards[j].id, mb->shards[j].id_len) < 0)
            hc_run_fail(run, "epoch@line %ld shards: %s is in the shards file, not in the journal",
                        e->line, mb->shards[j].id);
}

const struct hc_criterion hc_criteria[] = {
    {"batch_id", HC_SCOPE_BATCH, hc_c_batch_id},
    {"changes", HC_SCOPE_BATCH, hc_c_changes},
    {"receipt_version", HC_SCOPE_RECEIPT, hc_c_receipt_version},
    {"epoch", HC_SCOPE_RECEIPT, hc_c_epoch},
    {"ring_contract", HC_SCOPE_RECEIPT, hc_c_ring_contract},
    {"ring_online", HC_SCOPE_RECEIPT, hc_c_ring_online},
    {"vnodes_total", HC_SCOPE_RECEIPT, hc_c_vnodes_total},
    {"ring_id", HC_SCOPE_RECEIPT, hc_c_ring_id},
    {"placement_count", HC_SCOPE_RECEIPT, hc_c_placement_count},
    {"placement_hash", HC_SCOPE_RECEIPT, hc_c_placement_hash},
    {"placement_point", HC_SCOPE_RECEIPT, hc_c_placement_point},
    {"placement_vnode", HC_SCOPE_RECEIPT, hc_c_placement_vnode},
    {"placement_shard", HC_SCOPE_RECEIPT, hc_c_placement_shard},
    {"placement_reason", HC_SCOPE_RECEIPT, hc_c_placement_reason},
    {"placement_online", HC_SCOPE_RECEIPT, hc_c_placement_online},
    {"placement_ids", HC_SCOPE_RECEIPT, hc_c_placement_ids},
    {"shard_members", HC_SCOPE_RECEIPT, hc_c_shard_members},
    {"shard_state", HC_SCOPE_RECEIPT, hc_c_shard_state},
    {"shard_weight", HC_SCOPE_RECEIPT, hc_c_shard_weight},
    {"shard_capacity", HC_SCOPE_RECEIPT, hc_c_shard_capacity},
    {"shard_load", HC_SCOPE_RECEIPT, hc_c_shard_load},
    {"shard_received", HC_SCOPE_RECEIPT, hc_c_shard_received},
    {"shard_over_capacity", HC_SCOPE_RECEIPT, hc_c_shard_over_capacity},
    {"capacity", HC_SCOPE_RECEIPT, hc_c_capacity},
    {"counts", HC_SCOPE_RECEIPT, hc_c_counts},
    {"capacity_policy", HC_SCOPE_RECEIPT, hc_c_capacity_policy},
    {"ok", HC_SCOPE_RECEIPT, hc_c_ok},
    {"record_bytes", HC_SCOPE_RECORD, hc_c_record_bytes},
    {"journal_seq", HC_SCOPE_RECORD, hc_c_journal_seq},
    {"journal_epoch", HC_SCOPE_RECORD, hc_c_journal_epoch},
    {"fingerprint", HC_SCOPE_RECORD, hc_c_fingerprint},
    {"journal_batch_unique", HC_SCOPE_RECORD, hc_c_journal_batch_unique},
    {"epoch_ring_id", HC_SCOPE_EPOCH, hc_c_epoch_ring_id},
    {"epoch_id", HC_SCOPE_EPOCH, hc_c_epoch_id},
    {"epoch_seq", HC_SCOPE_EPOCH, hc_c_epoch_seq},
    {"epoch_prev", HC_SCOPE_EPOCH, hc_c_epoch_prev},
    {"epoch_changed", HC_SCOPE_EPOCH, hc_c_epoch_changed},
    {"epoch_first_seq", HC_SCOPE_EPOCH, hc_c_epoch_first_seq},
    {"epoch_current", HC_SCOPE_END, hc_c_epoch_current},
};

const size_t hc_criteria_count = sizeof hc_criteria / sizeof hc_criteria[0];

_Static_assert(sizeof hc_criteria / sizeof hc_criteria[0] > 0, "the criteria table is empty");
_Static_assert(sizeof hc_criteria / sizeof hc_criteria[0] + 7 <= HC_SLOTS_MAX,
               "report slots too few for the criteria table");
