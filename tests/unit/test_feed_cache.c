/* The feed's shared pages (gateway/http/feed_cache.c): a page answers exactly its question
 * (stream, form, cursor, limit), byte for byte with its bookmark; any other question misses;
 * a page made again for the same question replaces the first; past GW_FEED_CACHE_SLOTS pages
 * the least recently used one goes. */
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

static void put(struct gw_feed_cache *c, const struct gw_feed_question *q, const char *body,
                uint64_t last)
{
    struct gw_buf b;
    gw_buf_init(&b);
    gw_buf_puts(&b, body);
    gw_feed_cache_put(c, q, &b, last);
    gw_buf_free(&b);
}

/* The page's body as a string ("" when there is none); *last set when found. */
static const char *get(struct gw_feed_cache *c, const struct gw_feed_question *q, uint64_t *last,
                       char *out, size_t cap)
{
    struct gw_buf b;
    gw_buf_init(&b);
    out[0] = '\0';
    if (gw_feed_cache_get(c, q, &b, last))
        snprintf(out, cap, "%.*s", (int)b.len, b.data);
    gw_buf_free(&b);
    return out;
}

static void test_exact_question(void)
{
    struct gw_feed_cache c;
    char got[256];
    uint64_t last = 0;
    gw_feed_cache_init(&c);
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
    gw_feed_cache_init(&c);
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

int main(void)
{
    test_exact_question();
    test_least_recently_used_goes();
    return CHECK_DONE();
}
