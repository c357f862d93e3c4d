/* Counters by shard id: a sorted array found by binary search. */
#include "shard_counts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shard.h"

struct gw_shard_count {
    char id[GW_SHARD_ID_MAX];
    size_t id_len;
    uint64_t n;
};

void gw_shard_counts_init(struct gw_shard_counts *c)
{
    pthread_mutex_init(&c->lock, NULL);
    c->by_id = NULL;
    c->count = c->cap = 0;
}

void gw_shard_counts_free(struct gw_shard_counts *c)
{
    free(c->by_id);
    c->by_id = NULL;
    c->count = c->cap = 0;
    pthread_mutex_destroy(&c->lock);
}

static int compare(const struct gw_shard_count *e, const char *id, size_t id_len)
{
    int d = memcmp(e->id, id, e->id_len < id_len ? e->id_len : id_len);
    return d ? d : (e->id_len > id_len) - (e->id_len < id_len);
}

/* The first entry not below `id` (lock held); *found: it is `id`. */
static size_t locate(const struct gw_shard_counts *c, const char *id, size_t id_len, int *found)
{
    size_t lo = 0, hi = c->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (compare(&c->by_id[mid], id, id_len) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < c->count && compare(&c->by_id[lo], id, id_len) == 0;
    return lo;
}

/* Room for one more entry at `at` (lock held). Returns 0 or -ENOMEM. */
static int insert(struct gw_shard_counts *c, size_t at, const char *id, size_t id_len)
{
    if (c->count == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 8;
        struct gw_shard_count *grown = realloc(c->by_id, cap * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        c->by_id = grown;
        c->cap = cap;
    }
    memmove(c->by_id + at + 1, c->by_id + at, (c->count - at) * sizeof(*c->by_id));
    memcpy(c->by_id[at].id, id, id_len);
    c->by_id[at].id_len = id_len;
    c->by_id[at].n = 0;
    c->count++;
    return 0;
}

int gw_shard_counts_add(struct gw_shard_counts *c, const char *id, size_t id_len)
{
    if (id_len > GW_SHARD_ID_MAX)
        return -EINVAL;
    int found, rc = 0;
    pthread_mutex_lock(&c->lock);
    size_t at = locate(c, id, id_len, &found);
    if (!found)
        rc = insert(c, at, id, id_len);
    if (rc == 0)
        c->by_id[at].n++;
    pthread_mutex_unlock(&c->lock);
    return rc;
}

uint64_t gw_shard_counts_get(struct gw_shard_counts *c, const char *id, size_t id_len)
{
    int found;
    pthread_mutex_lock(&c->lock);
    size_t at = locate(c, id, id_len, &found);
    uint64_t n = found ? c->by_id[at].n : 0;
    pthread_mutex_unlock(&c->lock);
    return n;
}
