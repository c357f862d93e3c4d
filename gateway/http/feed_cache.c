/* Feed pages in memory, shared and counted against --feed-memory (feed_cache.h). */
#include "feed_cache.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void gw_feed_cache_init(struct gw_feed_cache *c, size_t limit)
{
    memset(c, 0, sizeof(*c));
    pthread_mutex_init(&c->lock, NULL);
    c->limit = limit;
    atomic_init(&c->held, 0);
    atomic_init(&c->bodies, 0);
    atomic_init(&c->refused, 0);
}

/* Drops a reference; the last frees the body. Returns the references held before. */
static unsigned release(struct gw_feed_body *b)
{
    struct gw_feed_cache *c = b->cache;
    size_t len = b->len;
    unsigned before = atomic_fetch_sub(&b->refs, 1);
    if (before != 1)
        return before;
    gw_feed_long_release(&b->whole);
    free(b->data);
    free(b);
    atomic_fetch_sub(&c->held, len);
    atomic_fetch_sub(&c->bodies, 1);
    return before;
}

/* After the HTTP daemon has stopped: no answer holds a body any more. */
void gw_feed_cache_free(struct gw_feed_cache *c)
{
    for (size_t i = 0; i < GW_FEED_CACHE_SLOTS; i++)
        if (c->pages[i].body)
            release(c->pages[i].body);
    pthread_mutex_destroy(&c->lock);
    memset(c, 0, sizeof(*c));
}

static void trim(struct gw_feed_cache *c);

void gw_feed_body_unref(void *arg)
{
    struct gw_feed_body *b = arg;
    struct gw_feed_cache *c = b->cache;
    if (release(b) == 2) { /* one holder left: if it is the cache, the page is idle now */
        pthread_mutex_lock(&c->lock);
        trim(c);
        pthread_mutex_unlock(&c->lock);
    }
}

static struct gw_feed_body *ref(struct gw_feed_body *b)
{
    atomic_fetch_add(&b->refs, 1);
    return b;
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

static void drop(struct gw_feed_page *p);

struct gw_feed_body *gw_feed_cache_get(struct gw_feed_cache *c, const struct gw_feed_question *q,
                                       uint64_t *last)
{
    struct gw_feed_body *b = NULL;
    pthread_mutex_lock(&c->lock);
    struct gw_feed_page *p = find(c, q);
    if (p && atomic_load(&p->body->damaged)) {
        drop(p);
        p = NULL;
    }
    if (p) {
        b = ref(p->body);
        *last = p->last;
        p->used = ++c->clock;
    }
    pthread_mutex_unlock(&c->lock);
    return b;
}

/* The lock held. */
static void drop(struct gw_feed_page *p)
{
    release(p->body);
    p->body = NULL;
}

/* The lock held: drops the least recently used kept page that only the cache holds; 0 when
 * every kept page is being sent. */
static int drop_idle(struct gw_feed_cache *c)
{
    struct gw_feed_page *v = NULL;
    for (size_t i = 0; i < GW_FEED_CACHE_SLOTS; i++) {
        struct gw_feed_page *p = &c->pages[i];
        if (p->body && atomic_load(&p->body->refs) == 1 && (!v || p->used < v->used))
            v = p;
    }
    if (v)
        drop(v);
    return v != NULL;
}

/* The lock held: kept pages no answer is sending hold at most a quarter of the total, so the
 * memory left once every reader has gone is small (the least recently used go first). */
static void trim(struct gw_feed_cache *c)
{
    for (;;) {
        size_t idle = 0;
        for (size_t i = 0; i < GW_FEED_CACHE_SLOTS; i++) {
            struct gw_feed_body *b = c->pages[i].body;
            idle += b && atomic_load(&b->refs) == 1 ? b->len : 0;
        }
        if (idle <= c->limit / GW_FEED_IDLE_SHARE || !drop_idle(c))
            return;
    }
}

static int fits(struct gw_feed_cache *c, size_t len)
{
    size_t held = atomic_load(&c->held);
    return atomic_load(&c->bodies) == 0 || (len <= c->limit && held <= c->limit - len);
}

/* The lock held. */
static int room(struct gw_feed_cache *c, size_t len)
{
    while (!fits(c, len))
        if (!drop_idle(c)) {
            atomic_fetch_add(&c->refused, 1);
            return 0;
        }
    return 1;
}

int gw_feed_cache_room(struct gw_feed_cache *c, size_t len)
{
    if (fits(c, len))
        return 1; /* the common case, without the lock: nothing to drop */
    pthread_mutex_lock(&c->lock);
    int ok = room(c, len);
    pthread_mutex_unlock(&c->lock);
    return ok;
}

/* The lock held: the slot for q, a free one or the least recently used. */
static struct gw_feed_page *slot(struct gw_feed_cache *c, const struct gw_feed_question *q)
{
    struct gw_feed_page *v = find(c, q);
    for (size_t i = 0; i < GW_FEED_CACHE_SLOTS && !v; i++)
        if (!c->pages[i].body)
            v = &c->pages[i];
    if (v)
        return v;
    v = &c->pages[0];
    for (size_t i = 1; i < GW_FEED_CACHE_SLOTS; i++)
        if (c->pages[i].used < v->used)
            v = &c->pages[i];
    return v;
}

/* The lock held: keeps b for q (one more reference). */
static void keep_page(struct gw_feed_cache *c, const struct gw_feed_question *q,
                      struct gw_feed_body *b, uint64_t last)
{
    struct gw_feed_page *p = slot(c, q);
    if (p->body)
        drop(p);
    *p = (struct gw_feed_page){*q, ref(b), last, ++c->clock};
}

struct gw_feed_body *gw_feed_cache_make(struct gw_feed_cache *c, const struct gw_feed_question *q,
                                        struct gw_feed_out *out, uint64_t last, int keep)
{
    struct gw_buf *buf = &out->body;
    struct gw_feed_body *b = buf->failed ? NULL : malloc(sizeof(*b));
    if (!b) {
        gw_feed_out_free(out);
        return NULL;
    }
    pthread_mutex_lock(&c->lock);
    if (!room(c, buf->len)) {
        pthread_mutex_unlock(&c->lock);
        free(b);
        gw_feed_out_free(out);
        return NULL;
    }
    char *fit = realloc(buf->data, buf->len); /* the buffer's slack is not kept */
    if (fit)
        buf->data = fit;
    atomic_init(&b->refs, 1);
    atomic_init(&b->damaged, 0);
    b->cache = c;
    b->data = buf->data;
    b->len = buf->len;
    b->whole = out->whole;
    b->whole_at = out->whole_at;
    gw_feed_long_none(&out->whole); /* the body holds it now */
    buf->data = NULL;
    gw_buf_free(buf);
    atomic_fetch_add(&c->held, b->len);
    atomic_fetch_add(&c->bodies, 1);
    if (keep)
        keep_page(c, q, b, last);
    pthread_mutex_unlock(&c->lock);
    return b;
}
