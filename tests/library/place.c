/* Test driver of libshardgate (tests/library/test_libshardgate.py), built against the
 * installed library with pkg-config: `place CONTRACT SHARDS BATCH` writes the receipt
 * shardgate_place gives, `place --plan CONTRACT FROM TO` the plan shardgate_plan gives,
 * `place --parse CONTRACT SHARDS` loads them from memory and prints the epoch, and
 * `place --threads N CONTRACT SHARDS BATCH` places the batch and looks up 1,000 keys on one
 * topology from N threads at once, and writes the receipt once every thread got the same. */
#include <pthread.h>
#include <shardgate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *data = NULL;
    size_t cap = 0, n = 0, got;
    if (!f)
        return NULL;
    do {
        if (n == cap) {
            cap = cap ? 2 * cap : 65536;
            data = realloc(data, cap);
            if (!data)
                break;
        }
        got = fread(data + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    *len = n;
    return data;
}

static int load(const char *conf, const char *shards, shardgate_topology **t)
{
    shardgate_error err;
    shardgate_status st = shardgate_topology_load(conf, shards, t, &err);
    if (st != SHARDGATE_OK)
        fprintf(stderr, "status %d: %s\n", (int)st, err.message);
    return st;
}

static int emit(shardgate_status st, const shardgate_error *err, char *out, size_t len)
{
    if (st != SHARDGATE_OK) {
        fprintf(stderr, "status %d: %s\n", (int)st, err->message);
        return (int)st;
    }
    fwrite(out, 1, len, stdout);
    shardgate_free(out);
    return 0;
}

enum { THREAD_KEYS = 1000, THREAD_ROUNDS = 20, MAX_THREADS = 16 };

struct shared_reads {
    const shardgate_topology *t;
    const char *batch;
    size_t batch_len;
    const char *receipt; /* what the main thread got */
    size_t receipt_len;
    shardgate_placement keys[THREAD_KEYS];
};

static void key_name(char *buf, size_t cap, int i)
{
    snprintf(buf, cap, "key-%d", i);
}

static int same_placement(const shardgate_placement *a, const shardgate_placement *b)
{
    return a->shard_len == b->shard_len && memcmp(a->shard, b->shard, a->shard_len) == 0 &&
           a->hash == b->hash && a->point == b->point && a->vnode == b->vnode &&
           a->wrapped == b->wrapped;
}

static void *reader(void *arg)
{
    const struct shared_reads *r = arg;
    shardgate_error err;
    char key[32], *out;
    size_t len;
    for (int round = 0; round < THREAD_ROUNDS; round++) {
        if (shardgate_place(r->t, r->batch, r->batch_len, &out, &len, &err) != SHARDGATE_OK)
            return "place failed";
        int same = len == r->receipt_len && memcmp(out, r->receipt, len) == 0;
        shardgate_free(out);
        if (!same)
            return "a different receipt";
        for (int i = 0; i < THREAD_KEYS; i++) {
            shardgate_placement p;
            key_name(key, sizeof key, i);
            if (shardgate_lookup(r->t, key, strlen(key), &p) != SHARDGATE_OK ||
                !same_placement(&p, &r->keys[i]))
                return "a different placement";
        }
    }
    return NULL;
}

static int threads(int n, const char *conf, const char *shards, const char *batch_path)
{
    static struct shared_reads r;
    shardgate_topology *t;
    shardgate_error err;
    pthread_t tid[MAX_THREADS];
    char key[32], *out;
    int rc = 0;
    if (n < 1 || n > MAX_THREADS || (rc = load(conf, shards, &t)) != 0)
        return rc ? rc : 64;
    r.t = t;
    r.batch = slurp(batch_path, &r.batch_len);
    if (shardgate_place(t, r.batch, r.batch_len, &out, &r.receipt_len, &err) != SHARDGATE_OK) {
        fprintf(stderr, "status: %s\n", err.message);
        return 1;
    }
    r.receipt = out;
    for (int i = 0; i < THREAD_KEYS; i++) {
        memset(&r.keys[i], 0, sizeof r.keys[i]);
        key_name(key, sizeof key, i);
        shardgate_lookup(t, key, strlen(key), &r.keys[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_create(&tid[i], NULL, reader, &r);
    for (int i = 0; i < n; i++) {
        void *why;
        pthread_join(tid[i], &why);
        if (why) {
            fprintf(stderr, "thread %d: %s\n", i, (const char *)why);
            rc = 1;
        }
    }
    if (rc == 0)
        fwrite(r.receipt, 1, r.receipt_len, stdout);
    shardgate_free(out);
    free((char *)r.batch);
    shardgate_topology_free(t);
    return rc;
}

int main(int argc, char **argv)
{
    shardgate_topology *a, *b;
    shardgate_error err;
    char *out;
    size_t len, n1, n2;
    int rc;
    if (argc == 5 && (strcmp(argv[1], "--plan") == 0 || strcmp(argv[1], "--moves") == 0)) {
        if ((rc = load(argv[2], argv[3], &a)) != 0)
            return rc;
        if ((rc = load(argv[2], argv[4], &b)) != 0)
            return rc;
        shardgate_status st = strcmp(argv[1], "--plan") == 0
                                  ? shardgate_plan(a, b, &out, &len, &err)
                                  : shardgate_moves(a, b, &out, &len, &err);
        rc = emit(st, &err, out, len); /* out and len are read once the call has set them */
        shardgate_topology_free(a);
        shardgate_topology_free(b);
        return rc;
    }
    if (argc == 4 && strcmp(argv[1], "--parse") == 0) {
        char *c = slurp(argv[2], &n1), *s = slurp(argv[3], &n2);
        shardgate_status st = shardgate_topology_parse(c, n1, s, n2, &a, &err);
        free(c);
        free(s);
        if (st != SHARDGATE_OK) {
            fprintf(stderr, "status %d: %s\n", (int)st, err.message);
            return (int)st;
        }
        printf("%s %s\n", shardgate_epoch_id(a), shardgate_ring_id(a));
        shardgate_topology_free(a);
        return 0;
    }
    if (argc == 6 && strcmp(argv[1], "--threads") == 0)
        return threads(atoi(argv[2]), argv[3], argv[4], argv[5]);
    if (argc != 4) {
        fprintf(stderr, "usage: place CONTRACT SHARDS BATCH | --plan|--moves CONTRACT FROM TO | "
                        "--parse CONTRACT SHARDS | --threads N CONTRACT SHARDS BATCH\n");
        return 64;
    }
    if ((rc = load(argv[1], argv[2], &a)) != 0)
        return rc;
    char *batch = slurp(argv[3], &n1);
    shardgate_status st = shardgate_place(a, batch, n1, &out, &len, &err);
    rc = emit(st, &err, out, len);
    free(batch);
    shardgate_topology_free(a);
    return rc;
}
