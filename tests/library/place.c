/* Test driver of libshardgate (tests/library/test_libshardgate.py), built against the
 * installed library with pkg-config: `place CONTRACT SHARDS BATCH` writes the receipt
 * shardgate_place gives, `place --plan CONTRACT FROM TO` the plan shardgate_plan gives, and
 * `place --parse CONTRACT SHARDS` loads them from memory and prints the epoch. */
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

int main(int argc, char **argv)
{
    shardgate_topology *a, *b;
    shardgate_error err;
    char *out;
    size_t len, n1, n2;
    int rc;
    if (argc == 5 && strcmp(argv[1], "--plan") == 0) {
        if ((rc = load(argv[2], argv[3], &a)) != 0)
            return rc;
        if ((rc = load(argv[2], argv[4], &b)) != 0)
            return rc;
        shardgate_status st = shardgate_plan(a, b, &out, &len, &err);
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
    if (argc != 4) {
        fprintf(stderr, "usage: place CONTRACT SHARDS BATCH | --plan CONTRACT FROM TO | "
                        "--parse CONTRACT SHARDS\n");
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
