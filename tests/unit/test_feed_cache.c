/* The feed's shared pages (gateway/http/feed_cache.c): a page answers exactly its question
 * (stream, form, cursor, limit), byte for byte with its bookmark; any other question misses;
 * a page made again for the same question replaces the first; past GW_FEED_CACHE_SLOTS pages
 * the least recently used one goes. Every live page counts against the total: one that would
 * pass it is refused while other pages are being sent, kept pages nobody sends are dropped
 * to make room and hold at most a quarter of the total, and a page larger than the total is
 * served when it is the only one. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "feed_cache.h"

static struct gw_feed_question question(const char *shard, enum gw_feed_form form, uint64_t after,
                                        size_t limit)
{
    struct gw_feed_question q;
    memset(&q, 0, sizeof(q));
    q.shard_len = (size_t)snprintf(q.shard, sizeof(q.shard), "%s", shard);
    q.form = form;
    q.after = after;
    q.limit = limit;
    return q;
}

/* A page made for q (kept: `keep`), the caller's reference returned; NULL when refused. */
static struct gw_feed_body *make(struct gw_feed_cache *c, const struct gw_feed_question *q,
                                 const char *body, uint64_t last, int keep)
{
    struct gw_feed_out o = {.form = GW_FEED_NDJSON};
    gw_feed_out_begin(&o);
    gw_buf_puts(&o.body, body);
    struct gw_feed_body *page = gw_feed_cache_make(c, q, &o, last, keep);
    CHECK_TRUE(o.body.data == NULL && o.body.len == 0 && !gw_feed_long_held(&o.whole));
    return page;
}

/* A page made and kept, sent at once (the answer's reference dropped). */
static void put(struct gw_feed_cache *c, const struct gw_feed_question *q, const char *body,
                uint64_t last)
{
    gw_feed_body_unref(make(c, q, body, last, 1));
}

/* The page's body as a string ("" when there is none); *last set when found. */
static const char *get(struct gw_feed_cache *c, const struct gw_feed_question *q, uint64_t *last,
                       char *out, size_t cap)
{
    out[0] = '\0';
    struct gw_feed_body *b = gw_feed_cache_get(c, q, last);
    if (b) {
        snprintf(out, cap, "%.*s", (int)b->len, b->data);
        gw_feed_body_unref(b);
    }
    return out;
}

static void test_exact_question(void)
{
    struct gw_feed_cache c;
    char got[256];
    uint64_t last = 0;
    gw_feed_cache_init(&c, 1u << 20);
    struct gw_feed_question q = question("\"s0\"", GW_FEED_NDJSON, 41, 1000);
    put(&c, &q, "{\"type\":\"assignment\",\"seq\":42}\n{\"type\":\"bookmark\",\"last_seq\":42}\n",
        42);
    CHECK_EQ_STR(get(&c, &q, &last, got, sizeof(got)),
                 "{\"type\":\"assignment\",\"seq\":42}\n{\"type\":\"bookmark\",\"last_seq\":42}\n");
    CHECK_EQ_U64(last, 42);
    struct gw_feed_question other[] = {
        question("\"s1\"", GW_FEED_NDJSON, 41, 1000), question("", GW_FEED_NDJSON, 41, 1000),
        question("\"s0\"", GW_FEED_JSON, 41, 1000),   question("\"s0\"", GW_FEED_SSE, 41, 1000),
        question("\"s0\"", GW_FEED_NDJSON, 40, 1000), question("\"s0\"", GW_FEED_NDJSON, 42, 1000),
        question("\"s0\"", GW_FEED_NDJSON, 41, 999),  question("\"s00\"", GW_FEED_NDJSON, 41, 1000),
    };
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
        CHECK_EQ_STR(get(&c, &other[i], &last, got, sizeof(got)), "");
    /* made again (another consumer read it at the same time): the newer copy answers */
    put(&c, &q, "{\"type\":\"assignment\",\"seq\":43}\n{\"type\":\"bookmark\",\"last_seq\":43}\n",
        43);
    CHECK_EQ_STR(get(&c, &q, &last, got, sizeof(got)),
                 "{\"type\":\"assignment\",\"seq\":43}\n{\"type\":\"bookmark\",\"last_seq\":43}\n");
    CHECK_EQ_U64(last, 43);
    gw_feed_cache_free(&c);
}

static void test_least_recently_used_goes(void)
{
    struct gw_feed_cache c;
    char got[256], want[64];
    uint64_t last = 0;
    gw_feed_cache_init(&c, 1u << 20);
    struct gw_feed_question q[GW_FEED_CACHE_SLOTS + 1];
    for (uint64_t i = 0; i < GW_FEED_CACHE_SLOTS; i++) {
        q[i] = question("\"s0\"", GW_FEED_NDJSON, i, 1000);
        snprintf(want, sizeof(want), "page %llu\n", (unsigned long long)i);
        put(&c, &q[i], want, i + 1);
    }
    CHECK_EQ_STR(get(&c, &q[0], &last, got, sizeof(got)), "page 0\n"); /* 1 is now the oldest */
    q[GW_FEED_CACHE_SLOTS] = question("\"s0\"", GW_FEED_NDJSON, 100, 1000);
    put(&c, &q[GW_FEED_CACHE_SLOTS], "page 100\n", 101);
    CHECK_EQ_STR(get(&c, &q[1], &last, got, sizeof(got)), "");
    CHECK_EQ_STR(get(&c, &q[0], &last, got, sizeof(got)), "page 0\n");
    CHECK_EQ_U64(last, 1);
    for (uint64_t i = 2; i < GW_FEED_CACHE_SLOTS; i++) {
        snprintf(want, sizeof(want), "page %llu\n", (unsigned long long)i);
        CHECK_EQ_STR(get(&c, &q[i], &last, got, sizeof(got)), want);
        CHECK_EQ_U64(last, i + 1);
    }
    CHECK_EQ_STR(get(&c, &q[GW_FEED_CACHE_SLOTS], &last, got, sizeof(got)), "page 100\n");
    gw_feed_cache_free(&c);
}

/* Two answers of the same question send one body: the cache's, not a copy. */
static void test_one_body_shared(void)
{
    struct gw_feed_cache c;
    uint64_t last = 0;
    gw_feed_cache_init(&c, 1u << 20);
    struct gw_feed_question q = question("", GW_FEED_NDJSON, 0, 10);
    struct gw_feed_body *made = make(&c, &q, "0123456789", 7, 1);
    struct gw_feed_body *a = gw_feed_cache_get(&c, &q, &last);
    struct gw_feed_body *b = gw_feed_cache_get(&c, &q, &last);
    CHECK_TRUE(a == made && b == made);
    CHECK_EQ_U64(atomic_load(&made->refs), 4); /* the cache's and three answers' */
    CHECK_EQ_U64(atomic_load(&c.held), 10);
    CHECK_EQ_U64(atomic_load(&c.bodies), 1);
    gw_feed_body_unref(a);
    gw_feed_body_unref(b);
    gw_feed_body_unref(made);
    CHECK_EQ_U64(atomic_load(&c.held), 10); /* kept */
    gw_feed_cache_free(&c);
}

static void fill(char *out, char ch, size_t n)
{
    memset(out, ch, n);
    out[n] = '\0';
}

/* --feed-memory 400: with a kept page of 100 that nobody sends and a page of 250 being sent,
 * a page of 100 more is made by dropping the idle one; another is then refused (counted), as
 * is any room past what is held. */
static void test_total_bounds_the_pages_held(void)
{
    struct gw_feed_cache c;
    char hundred[101], big[251], got[512];
    uint64_t last = 0;
    fill(hundred, 'h', 100);
    fill(big, 'b', 250);
    gw_feed_cache_init(&c, 400);
    struct gw_feed_question q[4];
    for (size_t i = 0; i < 4; i++)
        q[i] = question("", GW_FEED_NDJSON, i, 10);
    put(&c, &q[0], hundred, 1); /* kept, sent: idle */
    struct gw_feed_body *sending = make(&c, &q[1], big, 2, 1);
    CHECK_EQ_U64(atomic_load(&c.held), 350);
    struct gw_feed_body *third = make(&c, &q[2], hundred, 3, 1);
    CHECK_TRUE(third != NULL);
    CHECK_EQ_U64(atomic_load(&c.held), 350);
    CHECK_EQ_STR(get(&c, &q[0], &last, got, sizeof(got)), ""); /* dropped for room */
    CHECK_TRUE(make(&c, &q[3], hundred, 4, 1) == NULL);
    CHECK_EQ_U64(atomic_load(&c.refused), 1);
    CHECK_EQ_U64(gw_feed_cache_room(&c, 50), 1);
    CHECK_EQ_U64(gw_feed_cache_room(&c, 51), 0);
    CHECK_EQ_U64(atomic_load(&c.refused), 2);
    CHECK_EQ_STR(get(&c, &q[1], &last, got, sizeof(got)), big); /* sent from the held body */
    gw_feed_body_unref(sending);
    gw_feed_body_unref(third);
    gw_feed_cache_free(&c);
}

/* Kept pages nobody sends hold at most a quarter of the total: with --feed-memory 100, a
 * second idle page of 20 drops the least recently used first one, and an idle page of 26 is
 * not kept once its answer is sent. */
static void test_idle_pages_hold_a_quarter(void)
{
    struct gw_feed_cache c;
    char twenty[21], more[27], got[64];
    uint64_t last = 0;
    fill(twenty, 't', 20);
    fill(more, 'm', 26);
    gw_feed_cache_init(&c, 100);
    struct gw_feed_question q1 = question("", GW_FEED_SSE, 1, 10);
    struct gw_feed_question q2 = question("", GW_FEED_SSE, 2, 10);
    struct gw_feed_question q3 = question("", GW_FEED_SSE, 3, 10);
    put(&c, &q1, twenty, 2);
    CHECK_EQ_STR(get(&c, &q1, &last, got, sizeof(got)), twenty);
    put(&c, &q2, twenty, 3);
    CHECK_EQ_U64(atomic_load(&c.held), 20);
    CHECK_EQ_STR(get(&c, &q1, &last, got, sizeof(got)), "");
    CHECK_EQ_STR(get(&c, &q2, &last, got, sizeof(got)), twenty);
    struct gw_feed_body *sending = make(&c, &q3, more, 4, 1);
    CHECK_EQ_U64(atomic_load(&c.held), 46); /* kept while it is being sent */
    CHECK_EQ_STR(get(&c, &q3, &last, got, sizeof(got)), more);
    gw_feed_body_unref(sending);
    CHECK_EQ_U64(atomic_load(&c.held), 0); /* 26 + 20 idle: both over the quarter, both go */
    gw_feed_cache_free(&c);
}

/* A page larger than the total is served when no other page is held, and only then. */
static void test_a_lone_page_larger_than_the_total(void)
{
    struct gw_feed_cache c;
    gw_feed_cache_init(&c, 10);
    struct gw_feed_question q1 = question("\"s\"", GW_FEED_JSON, 1, 10);
    struct gw_feed_question q2 = question("\"s\"", GW_FEED_JSON, 2, 10);
    struct gw_feed_body *big = make(&c, &q1, "0123456789abcdef", 2, 0);
    CHECK_TRUE(big != NULL);
    CHECK_EQ_U64(atomic_load(&c.held), 16);
    CHECK_TRUE(make(&c, &q2, "x", 3, 0) == NULL);
    gw_feed_body_unref(big); /* not kept: freed when sent */
    CHECK_EQ_U64(atomic_load(&c.held), 0);
    CHECK_EQ_U64(atomic_load(&c.bodies), 0);
    struct gw_feed_body *small = make(&c, &q2, "x", 3, 0);
    CHECK_TRUE(small != NULL);
    gw_feed_body_unref(small);
    gw_feed_cache_free(&c);
}

int main(void)
{
    test_exact_question();
    test_least_recently_used_goes();
    test_one_body_shared();
    test_total_bounds_the_pages_held();
    test_idle_pages_hold_a_quarter();
    test_a_lone_page_larger_than_the_total();
    return CHECK_DONE();
}
