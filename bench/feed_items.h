/* What a bench feed consumer does with the bytes it receives, shared by bench/feed_reader (the
 * real feed) and bench/loopback_floor (the same bytes with no gateway): the clock it paces by and
 * the count of assignment lines, so the floor's consumers do exactly the readers' work. Its
 * includer defines _GNU_SOURCE (memmem) before any include. */
#ifndef SHARDGATE_BENCH_FEED_ITEMS_H
#define SHARDGATE_BENCH_FEED_ITEMS_H

#include <stdint.h>
#include <string.h>
#include <time.h>

#define FEED_ITEM "{\"type\":\"assignment\""

static inline double feed_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The assignment lines in p[0..n). */
static inline uint64_t feed_count_items(const char *p, size_t n)
{
    uint64_t count = 0;
    const char *end = p + n;
    while ((p = memmem(p, (size_t)(end - p), FEED_ITEM, strlen(FEED_ITEM))) != NULL) {
        count++;
        p += strlen(FEED_ITEM);
    }
    return count;
}

#endif
