/* The idempotency index while it grows (docs/performance.md §10): claim+commit of N
 * distinct ids with a persist every P (from a checkpoint thread, as the gateway does), the
 * latency of every operation in a log-linear histogram; then the same number of operations on
 * an index already holding N; VmRSS at the end and after a reopen. Built with
 * -DIDX_BENCH_BASELINE against an older idempotency.c (bench/idx_baseline.sh) it times that
 * table's growth with the same harness (no persist, no reopen).
 * Usage: idx_bench N PERSIST_EVERY STATE_DIR */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "idempotency.h"

#define SUB_BITS 5 /* 32 sub-buckets per power of two: about 3% resolution */

struct histogram {
    uint64_t counts[64 << SUB_BITS];
    uint64_t n, max;
};

static void hist_add(struct histogram *h, uint64_t ns)
{
    unsigned msb = ns ? 63u - (unsigned)__builtin_clzll(ns) : 0;
    unsigned sub = msb > SUB_BITS ? (unsigned)(ns >> (msb - SUB_BITS)) & ((1u << SUB_BITS) - 1)
                                  : (unsigned)ns & ((1u << SUB_BITS) - 1);
    h->counts[(msb << SUB_BITS) | sub]++;
    h->n++;
    if (ns > h->max)
        h->max = ns;
}

/* The upper bound of the bucket holding the q-quantile. */
static uint64_t hist_quantile(const struct histogram *h, double q)
{
    uint64_t want = (uint64_t)(q * (double)h->n), seen = 0;
    for (unsigned i = 0; i < (64u << SUB_BITS); i++) {
        seen += h->counts[i];
        if (seen > want) {
            unsigned msb = i >> SUB_BITS, sub = i & ((1u << SUB_BITS) - 1);
            if (msb <= SUB_BITS) /* below 64 ns the bucket is the value itself */
                return (uint64_t)sub | (1u << msb);
            return ((uint64_t)((1u << SUB_BITS) | sub) + 1) << (msb - SUB_BITS);
        }
    }
    return h->max;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* "VmRSS N kB (anonymous A, file-backed F)": mapped runs count as file-backed pages. */
static const char *rss(void)
{
    static char out[128];
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long vm = -1, anon = -1, file = -1;
    while (f && fgets(line, sizeof(line), f)) {
        sscanf(line, "VmRSS: %ld", &vm);
        sscanf(line, "RssAnon: %ld", &anon);
        sscanf(line, "RssFile: %ld", &file);
    }
    if (f)
        fclose(f);
    snprintf(out, sizeof(out), "VmRSS %ld kB (anonymous %ld, file-backed %ld)", vm, anon, file);
    return out;
}

#ifdef IDX_BENCH_BASELINE
/* The table of the previous version: no files, no persist. */
static int bench_open(struct gw_idem *t, const char *dir)
{
    (void)dir;
    return gw_idem_init(t);
}
static void bench_close(struct gw_idem *t)
{
    gw_idem_free(t);
}
static struct gw_idem_ref ref_for(uint64_t seq)
{
    struct gw_idem_ref ref = {100 * seq, 50};
    return ref;
}
static void bench_persist(struct gw_idem *t, uint64_t seq)
{
    (void)t, (void)seq;
}
#else
static int bench_open(struct gw_idem *t, const char *dir)
{
    struct gw_idem_options o = {0};
    uint64_t durable;
    struct gw_error err;
    int rc = gw_idem_open(t, dir, &o, &durable, &err);
    if (rc != 0)
        fprintf(stderr, "idx_bench: %s\n", err.msg);
    return rc;
}
static void bench_close(struct gw_idem *t)
{
    gw_idem_close(t);
}
static struct gw_idem_ref ref_for(uint64_t seq)
{
    struct gw_idem_ref ref = {1, 100 * seq, 50, seq, 0};
    return ref;
}
static void bench_persist(struct gw_idem *t, uint64_t seq)
{
    struct gw_error err;
    if (gw_idem_persist(t, seq, &err) != 0) {
        fprintf(stderr, "idx_bench: persist: %s\n", err.msg);
        exit(1);
    }
}
#endif

/* The checkpoint thread: persists through the latest seq it is handed. */
struct checkpointer {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    uint64_t wanted, done;
    int stop;
    struct gw_idem *t;
};

static void *checkpoint_thread(void *arg)
{
    struct checkpointer *c = arg;
    pthread_mutex_lock(&c->lock);
    while (!c->stop || c->wanted > c->done) {
        if (c->wanted == c->done) {
            pthread_cond_wait(&c->wake, &c->lock);
            continue;
        }
        uint64_t seq = c->wanted;
        pthread_mutex_unlock(&c->lock);
        bench_persist(c->t, seq);
        pthread_mutex_lock(&c->lock);
        c->done = seq;
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

static void request_persist(struct checkpointer *c, uint64_t seq)
{
    pthread_mutex_lock(&c->lock);
    c->wanted = seq;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
}

/* claim + commit of ids [from, to); returns the number of verdicts other than NEW. */
static uint64_t acknowledge(struct gw_idem *t, struct checkpointer *c, uint64_t from, uint64_t to,
                            uint64_t persist_every, struct histogram *h)
{
    char id[32];
    unsigned char fp[GW_FINGERPRINT_LEN] = {0};
    uint64_t bad = 0;
    for (uint64_t seq = from; seq < to; seq++) {
        int len = snprintf(id, sizeof(id), "bench-%012" PRIu64, seq);
        memcpy(fp, &seq, sizeof(seq));
        enum gw_idem_verdict v;
        struct gw_idem_ref ref;
        uint64_t t0 = now_ns();
        int rc = gw_idem_claim(t, id, (size_t)len, fp, &v, &ref);
        if (rc == 0 && v == GW_IDEM_NEW)
            gw_idem_commit(t, id, (size_t)len, ref_for(seq));
        hist_add(h, now_ns() - t0);
        bad += rc != 0 || v != GW_IDEM_NEW;
        if (seq % persist_every == 0)
            request_persist(c, seq);
    }
    return bad;
}

static void report(const char *phase, const struct histogram *h, double seconds)
{
    printf("%-7s ops %" PRIu64 " in %.1f s  p50 %" PRIu64 " ns  p99 %" PRIu64 " ns  p99.9 %" PRIu64
           " ns  max %" PRIu64 " ns\n",
           phase, h->n, seconds, hist_quantile(h, 0.5), hist_quantile(h, 0.99),
           hist_quantile(h, 0.999), h->max);
}

/* Runs a phase of `n` operations from id `from`. */
static uint64_t phase(struct gw_idem *t, struct checkpointer *c, const char *name, uint64_t from,
                      uint64_t n, uint64_t every, struct histogram *h)
{
    uint64_t t0 = now_ns();
    uint64_t bad = acknowledge(t, c, from, from + n, every, h);
    report(name, h, (double)(now_ns() - t0) / 1e9);
    printf("after %s: %s\n", name, rss());
    return bad;
}

/* Reopens and looks up a sample of ids; returns how many were missing. */
static uint64_t reopen_and_sample(struct gw_idem *t, const char *dir, uint64_t last)
{
    bench_close(t);
    uint64_t t0 = now_ns();
    if (bench_open(t, dir) != 0)
        exit(1);
    printf("reopen: %.3f s, %s\n", (double)(now_ns() - t0) / 1e9, rss());
    char id[32];
    struct gw_idem_ref ref;
    uint64_t missing = 0;
    for (uint64_t seq = 1; seq <= last; seq += last / 1000 + 1) {
        int len = snprintf(id, sizeof(id), "bench-%012" PRIu64, seq);
        missing += gw_idem_find(t, id, (size_t)len, &ref) != 0;
    }
    return missing;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: idx_bench N PERSIST_EVERY STATE_DIR\n");
        return 64;
    }
    uint64_t n = strtoull(argv[1], NULL, 10), every = strtoull(argv[2], NULL, 10);
    setvbuf(stdout, NULL, _IOLBF, 0); /* each figure as soon as it is measured */
    struct gw_idem t;
    mkdir(argv[3], 0750); /* the state dir, made by the journal in the gateway */
    if (n == 0 || every == 0 || bench_open(&t, argv[3]) != 0)
        return 1;
    struct checkpointer c = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, &t};
    pthread_t th;
    pthread_create(&th, NULL, checkpoint_thread, &c);
    static struct histogram growth, steady;
    uint64_t bad = phase(&t, &c, "growth", 1, n, every, &growth);
    bad += phase(&t, &c, "steady", n + 1, n, every, &steady);
    pthread_mutex_lock(&c.lock);
    c.stop = 1;
    pthread_cond_signal(&c.wake);
    pthread_mutex_unlock(&c.lock);
    pthread_join(th, NULL);
    printf("ratio p99.9 growth/steady: %.3g\n",
           (double)hist_quantile(&growth, 0.999) / (double)hist_quantile(&steady, 0.999));
#ifndef IDX_BENCH_BASELINE
    bad += reopen_and_sample(&t, argv[3], 2 * n);
#endif
    bench_close(&t);
    printf("%s\n", bad ? "FAILED: unexpected verdicts or missing ids" : "all ids NEW, then found");
    return bad ? 1 : 0;
}
