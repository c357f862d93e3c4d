/* Per-epoch and cumulative shard sums, and their rendering as a checkpoint writes them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "totals.h"
#include "verify.h"

/* The shard id in list (inserted zeroed when absent); NULL on out of memory. */
static struct hc_tot_shard *hc_tot_find(struct hc_tot_list *l, const char *id, size_t len)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = hc_id_cmp(l->s[mid].id, l->s[mid].id_len, id, len);
        if (c == 0)
            return &l->s[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (len > HC_SHARD_ID_MAX)
        len = HC_SHARD_ID_MAX;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        struct hc_tot_shard *s = realloc(l->s, cap * sizeof *s);
        if (s == NULL)
            return NULL;
        l->s = s;
        l->cap = cap;
    }
    memmove(&l->s[lo + 1], &l->s[lo], (l->n - lo) * sizeof *l->s);
    l->n++;
    struct hc_tot_shard *s = &l->s[lo];
    memset(s, 0, sizeof *s);
    memcpy(s->id, id, len);
    s->id_len = len;
    return s;
}

int hc_totals_epoch(struct hc_totals *t, const struct hc_membership *m)
{
    for (size_t i = 0; i < m->n; i++) {
        struct hc_tot_shard *s = hc_tot_find(&t->ledger, m->shards[i].id, m->shards[i].id_len);
        if (s == NULL)
            return -ENOMEM;
        s->weight = m->shards[i].weight;
        s->capacity = m->shards[i].capacity;
    }
    return 0;
}

static struct hc_tot_epoch *hc_tot_epoch_find(struct hc_totals *t, int64_t epoch_seq)
{
    size_t at = t->n_ep;
    while (at > 0 && t->ep[at - 1].epoch_seq >= epoch_seq) {
        if (t->ep[at - 1].epoch_seq == epoch_seq)
            return &t->ep[at - 1];
        at--;
    }
    if (t->n_ep == t->cap_ep) {
        size_t cap = t->cap_ep ? t->cap_ep * 2 : 8;
        struct hc_tot_epoch *ep = realloc(t->ep, cap * sizeof *ep);
        if (ep == NULL)
            return NULL;
        t->ep = ep;
        t->cap_ep = cap;
    }
    memmove(&t->ep[at + 1], &t->ep[at], (t->n_ep - at) * sizeof *t->ep);
    t->n_ep++;
    memset(&t->ep[at], 0, sizeof t->ep[at]);
    t->ep[at].epoch_seq = epoch_seq;
    return &t->ep[at];
}

int hc_totals_add(struct hc_totals *t, int64_t epoch_seq, const char *id, size_t len, uint64_t load,
                  uint64_t received)
{
    if (received == 0)
        return 0; /* only shards with a non-zero received are listed */
    struct hc_tot_epoch *e = hc_tot_epoch_find(t, epoch_seq);
    struct hc_tot_shard *s = e ? hc_tot_find(&e->shards, id, len) : NULL;
    struct hc_tot_shard *l = s ? hc_tot_find(&t->ledger, id, len) : NULL;
    if (l == NULL)
        return -ENOMEM;
    s->load += load;
    s->received += received;
    l->load += load;
    l->received += received;
    return 0;
}

static int hc_render_epoch(struct hc_text *o, const struct hc_epoch *e)
{
    const struct hc_epoch_chain *c = &e->chain;
    const char *id = c->legacy ? e->epoch_id : c->epoch;
    const char *prev = c->prev_null ? NULL : c->prev;
    if (c->legacy)
        prev = c->before ? c->before->chain.legacy ? c->before->epoch_id : c->before->chain.epoch
                         : NULL;
    int64_t first = c->legacy ? c->last_seq + 1 : c->first_seq;
    /* a legacy record's epoch_seq is its position among the epoch records (docs/journal.md §2) */
    int64_t seq = c->legacy ? c->position : c->epoch_seq;
    int rc = hc_text_printf(o, "{\"epoch\":\"%s\",\"ring\":\"%s\",\"epoch_seq\":%lld,\"prev\":", id,
                            e->recorded_id, (long long)seq);
    rc = rc ? rc : prev ? hc_text_printf(o, "\"%s\"", prev) : hc_text_str(o, "null");
    rc = rc ? rc
            : hc_text_printf(o, ",\"source\":\"%s\",\"time\":", c->legacy ? "start" : c->source);
    rc = rc ? rc : c->time[0] ? hc_text_printf(o, "\"%s\"", c->time) : hc_text_str(o, "null");
    return rc ? rc : hc_text_printf(o, ",\"first_seq\":%lld}", (long long)first);
}

static int hc_render_shard(struct hc_text *o, const struct hc_tot_shard *s, int ledger)
{
    int rc = hc_text_str(o, "{\"id\":\"");
    rc = rc ? rc : hc_text_add(o, s->id, s->id_len);
    if (ledger)
        rc = rc ? rc
                : hc_text_printf(o, "\",\"weight\":%u,\"capacity\":%lld,\"load\":", s->weight,
                                 (long long)s->capacity);
    else
        rc = rc ? rc : hc_text_str(o, "\",\"load\":");
    rc = rc ? rc : hc_text_u128(o, s->load);
    rc = rc ? rc : hc_text_str(o, ",\"received\":");
    rc = rc ? rc : hc_text_u128(o, s->received);
    return rc ? rc : hc_text_str(o, "}");
}

static int hc_render_list(struct hc_text *o, const struct hc_tot_list *l, int ledger)
{
    int rc = hc_text_str(o, "[");
    for (size_t i = 0; rc == 0 && i < l->n; i++) {
        rc = i ? hc_text_str(o, ",") : 0;
        rc = rc ? rc : hc_render_shard(o, &l->s[i], ledger);
    }
    return rc ? rc : hc_text_str(o, "]");
}

int hc_totals_render(const struct hc_totals *t, struct hc_epoch *const *epochs, size_t n,
                     struct hc_text *out)
{
    int rc = hc_text_str(out, "\"epochs\":[");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = i ? hc_text_str(out, ",") : 0;
        rc = rc ? rc : hc_render_epoch(out, epochs[i]);
    }
    rc = rc ? rc : hc_text_str(out, "],\"ledger\":");
    rc = rc ? rc : hc_render_list(out, &t->ledger, 1);
    rc = rc ? rc : hc_text_str(out, ",\"totals\":[");
    for (size_t i = 0; rc == 0 && i < t->n_ep; i++) {
        rc = i ? hc_text_str(out, ",") : 0;
        rc = rc ? rc
                : hc_text_printf(out,
                                 "{\"epoch_seq\":%lld,\"shards\":", (long long)t->ep[i].epoch_seq);
        rc = rc ? rc : hc_render_list(out, &t->ep[i].shards, 0);
        rc = rc ? rc : hc_text_str(out, "}");
    }
    return rc ? rc : hc_text_str(out, "]");
}

void hc_totals_free(struct hc_totals *t)
{
    free(t->ledger.s);
    for (size_t i = 0; i < t->n_ep; i++)
        free(t->ep[i].shards.s);
    free(t->ep);
    memset(t, 0, sizeof *t);
}
