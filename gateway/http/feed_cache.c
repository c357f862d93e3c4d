/* Recent feed pages shared by the consumers that ask the same question (feed_cache.h). */
#include "feed_cache.h"

#include <stdlib.h>
#include <string.h>

void gw_feed_cache_init(struct gw_feed_cache *c)
{
    memset(c, 0, sizeof(*c));
    pthread_mutex_init(&c->lock, NULL);
}

void gw_feed_cache_free(struct gw_feed_cache *c)
{
    for (size_t i = 0; i < GW_FEED_CACHE_SLOTS; i++)
        free(c->pages[i].body);
    pthread_mutex_destroy(&c->lock);
    memset(c, 0, sizeof(*c));
}

static int same_question(const struct gw_feed_question *a, const struct gw_feed_question *b)
{
    return a->after == b->after && a->limit == b->limit && a->form == b->form &&
           a->shard_len == b->shard_len && memcmp(a->shard, b->shard, a->shard_len) == 0;
}

/* The lock held: the page answering q, or NULL. */
static struct gw_feed_page *find(struct gw_feed_cache *c, const struct gw_feed_question *q)
{
    for (size_t i = 0; i < GW_FEED_CACHE_SLOTS; i++)
        if (c->pages[i].body && same_question(&c->pages[i].q, q))
            return &c->pages[i];
    return NULL;
}

int gw_feed_cache_get(struct gw_feed_cache *c, const struct gw_feed_question *q, struct gw_buf *out,
                      uint64_t *last)
{
    int found = 0;
    pthread_mutex_lock(&c->lock);
    struct gw_feed_page *p = find(c, q);
    if (p) {
        gw_buf_append(out, p->body, p->len);
        found = !out->failed;
        *last = p->last;
        p->used = ++c->clock;
    }
    pthread_mutex_unlock(&c->lock);
    return found;
}

/* The lock held: the slot to fill, a free one or the least recently used. */
static struct gw_feed_page *victim(struct gw_feed_cache *c)
{
    struct gw_feed_page *v = &c->pages[0];
    for (size_t i = 0; i < GW_FEED_CACHE_SLOTS && v->body; i++)
        if (!c->pages[i].body || c->pages[i].used < v->used)
            v = &c->pages[i];
    return v;
}

void gw_feed_cache_put(struct gw_feed_cache *c, const struct gw_feed_question *q,
                       const struct gw_buf *body, uint64_t last)
{
    char *copy = body->failed ? NULL : malloc(body->len ? body->len : 1);
    if (!copy)
        return;
    memcpy(copy, body->data, body->len);
    pthread_mutex_lock(&c->lock);
    struct gw_feed_page *p = find(c, q);
    if (!p)
        p = victim(c);
    free(p->body);
    *p = (struct gw_feed_page){*q, copy, body->len, last, ++c->clock};
    pthread_mutex_unlock(&c->lock);
}
