/* Shared helpers of the benchmark programs: a clock, medians, the key set, peak RSS. */
#ifndef SHARDGATE_BENCH_UTIL_H
#define SHARDGATE_BENCH_UTIL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A set of distinct keys in one arena: key i is data + off[i], len[i] bytes. */
struct bench_keys {
    char *data;
    uint32_t *off;
    uint8_t *len;
    size_t n;
};

static inline double bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* CPU time of this thread: what the other engineers' load on the shared cores cannot inflate
 * (it still shares caches with them). */
static inline double bench_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of n values (sorts them in place); NaN for none. */
static inline double bench_median(double *v, size_t n)
{
    if (n == 0)
        return NAN;
    qsort(v, n, sizeof(*v), bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static inline uint64_t bench_rand(uint64_t *state)
{
    uint64_t x = *state; /* xorshift64*: deterministic keys in every run */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 2685821657736338717ULL;
}

/* n distinct keys of 8..40 bytes: "<5+ hex digits of i>-" then random [a-z0-9] filler. The
 * hex counter before the '-' makes every key distinct. Exits on allocation failure. */
static inline void bench_keys_make(struct bench_keys *k, size_t n, uint64_t seed)
{
    static const char alnum[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    k->n = n;
    k->data = malloc(n * 40 + 1);
    k->off = malloc(n * sizeof(*k->off));
    k->len = malloc(n);
    if (!k->data || !k->off || !k->len) {
        fprintf(stderr, "bench: out of memory for %zu keys\n", n);
        exit(1);
    }
    uint64_t st = seed | 1;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        size_t want = 8 + bench_rand(&st) % 33;
        int head = snprintf(k->data + at, 41, "%05zx-", i);
        size_t len = (size_t)head > want ? (size_t)head : want;
        for (size_t j = (size_t)head; j < len; j++)
            k->data[at + j] = alnum[bench_rand(&st) % 36];
        k->off[i] = (uint32_t)at;
        k->len[i] = (uint8_t)len;
        at += len;
    }
}

static inline void bench_keys_free(struct bench_keys *k)
{
    free(k->data);
    free(k->off);
    free(k->len);
}

/* The kB value of a "Name:   N kB" line of /proc/self/status, or 0. */
static inline long bench_status_kb(const char *name)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = 0;
    size_t n = strlen(name);
    while (f && fgets(line, sizeof(line), f)) {
        if (strncmp(line, name, n) == 0 && line[n] == ':')
            kb = strtol(line + n + 1, NULL, 10);
    }
    if (f)
        fclose(f);
    return kb;
}

#endif
