/* The idempotency index bake-off (docs/performance.md §17): the same workload against the
 * gateway's index ("index": gateway/store/file/index, its own runs until RocksDB replaced them),
 * LMDB, SQLite (WAL) and RocksDB. Every engine maps the 16-byte key of a batch id
 * (gw_idem_key_of) to a 48-byte value (fingerprint prefix, where the receipt lies, its seq, when
 * acknowledged) and keeps the seq it is durable through in the same transaction, as the gateway
 * needs (docs/decisions.md §15).
 * Usage:
 *   index_bakeoff ENGINE insert DIR N TXN   N ids in transactions of TXN ids, each durable;
 *                                           then lookups of stored and of absent ids
 *   index_bakeoff ENGINE reopen DIR N       open, the seq it is durable through, 1,000 lookups
 *   index_bakeoff ENGINE crash DIR TXN MS   a child inserts, kill -9 after MS ms; every id of
 *                                           a transaction it saw committed must be found
 *   index_bakeoff ENGINE check DIR N        every id 1..N: found with its value, absent, error */
#include <errno.h>
#include <inttypes.h>
#include <lmdb.h>
#include <rocksdb/c.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "idem_rec.h"
#include "idempotency.h"

#define VAL_LEN 48
#define META_KEY "~durable_seq" /* not 16 bytes: never a batch id's key */

struct db;
struct engine {
    const char *name;
    int (*open)(struct db **d, const char *dir);
    /* One durable transaction of ids first..first+n-1, durable through first+n-1. */
    int (*put)(struct db *d, uint64_t first, size_t n);
    /* A key's value, exactly `outlen` bytes of it: 1 found, 0 absent, <0 an error. */
    int (*lookup)(struct db *d, const void *k, size_t klen, void *out, size_t outlen);
    /* The gateway's index looks ids up by themselves, not by key bytes: these instead. */
    int (*get_id)(struct db *d, uint64_t i, int absent, unsigned char val[VAL_LEN]);
    uint64_t (*durable_id)(struct db *d);
    void (*close)(struct db *d);
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Batch id i (1-based) or an id never stored. */
static size_t id_of(uint64_t i, int absent, char *buf, size_t cap)
{
    return (size_t)snprintf(buf, cap, "%s-%012" PRIu64, absent ? "absent" : "batch", i);
}

static void key_of(uint64_t i, int absent, unsigned char key[16])
{
    char id[64];
    struct gw_idem_key k = gw_idem_key_of(id, id_of(i, absent, id, sizeof id));
    for (int b = 0; b < 8; b++) {
        key[b] = (unsigned char)(k.hi >> (56 - 8 * b));
        key[8 + b] = (unsigned char)(k.lo >> (56 - 8 * b));
    }
}

/* The value of id i: its seq is i, the rest derived from i so that a check can recompute it. */
static void val_of(uint64_t i, unsigned char val[VAL_LEN])
{
    uint64_t words[6] = {
        i * 0x9e3779b97f4a7c15u, 1 + i / 100000, i * 512, i, 1765000000000 + i, 512};
    memcpy(val, words, VAL_LEN);
}

/* ---- the gateway's index (gateway/store/file/index): RocksDB, no log, a flush per persist ---- */
struct db_index {
    struct gw_idem t;
    uint64_t durable; /* as gw_idem_open said, then as persisted */
};

static int index_open(struct db **d, const char *dir)
{
    struct db_index *r = calloc(1, sizeof *r);
    struct gw_idem_options o = {0};
    struct gw_error err = {0};
    mkdir(dir, 0750);
    if (!r || gw_idem_open(&r->t, dir, &o, &r->durable, &err) != 0) {
        fprintf(stderr, "index: open: %s\n", err.msg);
        free(r);
        return -1;
    }
    *d = (struct db *)r;
    return 0;
}

static int index_put(struct db *d, uint64_t first, size_t n)
{
    struct db_index *r = (struct db_index *)d;
    unsigned char fp[GW_FINGERPRINT_LEN] = {0};
    for (uint64_t i = first; i < first + n; i++) {
        unsigned char v[VAL_LEN];
        uint64_t w[6];
        char id[64];
        val_of(i, v);
        memcpy(w, v, sizeof w);
        memcpy(fp, &w[0], 8);
        struct gw_idem_ref ref = {w[1], w[2], w[5], w[3], 0};
        if (gw_idem_insert(&r->t, id, id_of(i, 0, id, sizeof id), fp, ref) != 0)
            return -1;
    }
    struct gw_error err = {0};
    if (gw_idem_persist(&r->t, first + n - 1, &err) != 0)
        return -1;
    r->durable = first + n - 1;
    return 0;
}

static int index_get(struct db *d, uint64_t i, int absent, unsigned char val[VAL_LEN])
{
    struct db_index *r = (struct db_index *)d;
    char id[64];
    struct gw_idem_ref ref;
    int rc = gw_idem_find(&r->t, id, id_of(i, absent, id, sizeof id), &ref);
    if (rc == -ENOENT)
        return 0;
    if (rc != 0)
        return rc;
    val_of(ref.seq, val); /* the index keeps these fields: compare them */
    uint64_t w[6];
    memcpy(w, val, sizeof w);
    if (w[1] != ref.segment || w[2] != ref.offset || w[5] != ref.len || ref.seq != i)
        memset(val, 0, VAL_LEN);
    return 1;
}

static uint64_t index_durable(struct db *d)
{
    return ((struct db_index *)d)->durable;
}

static void index_close(struct db *d)
{
    gw_idem_close(&((struct db_index *)d)->t);
    free(d);
}

/* ---- LMDB: one environment, the default (synced) commits ---- */
struct db_lmdb {
    MDB_env *env;
    MDB_dbi dbi;
};

#define LMDB_CHUNK 32768 /* ids per write transaction: stays under its dirty-page limit */

static int lmdb_open(struct db **d, const char *dir)
{
    struct db_lmdb *l = calloc(1, sizeof *l);
    MDB_txn *txn;
    mkdir(dir, 0750);
    if (!l || mdb_env_create(&l->env) || mdb_env_set_mapsize(l->env, (size_t)64 << 30) ||
        mdb_env_open(l->env, dir, MDB_NORDAHEAD, 0640) || mdb_txn_begin(l->env, NULL, 0, &txn) ||
        mdb_dbi_open(txn, NULL, 0, &l->dbi) || mdb_txn_commit(txn)) {
        fprintf(stderr, "lmdb: cannot open %s\n", dir);
        return -1;
    }
    /* A page past the end of data.mdb would be a SIGBUS when read through the map. */
    MDB_envinfo info;
    MDB_stat st;
    struct stat file;
    char path[4096];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    if (mdb_env_info(l->env, &info) || mdb_env_stat(l->env, &st) || stat(path, &file) ||
        (uint64_t)file.st_size < ((uint64_t)info.me_last_pgno + 1) * st.ms_psize) {
        fprintf(stderr, "lmdb: %s: shorter than its last page\n", path);
        mdb_env_close(l->env);
        return -1;
    }
    *d = (struct db *)l;
    return 0;
}

static int lmdb_put(struct db *d, uint64_t first, size_t n)
{
    struct db_lmdb *l = (struct db_lmdb *)d;
    for (size_t done = 0; done < n;) {
        size_t m = n - done < LMDB_CHUNK ? n - done : LMDB_CHUNK;
        MDB_txn *txn;
        if (mdb_txn_begin(l->env, NULL, 0, &txn))
            return -1;
        for (uint64_t i = first + done; i < first + done + m; i++) {
            unsigned char k[16], v[VAL_LEN];
            key_of(i, 0, k);
            val_of(i, v);
            MDB_val key = {16, k}, val = {VAL_LEN, v};
            if (mdb_put(txn, l->dbi, &key, &val, 0))
                return mdb_txn_abort(txn), -1;
        }
        done += m;
        if (done == n) {
            uint64_t seq = first + n - 1;
            MDB_val key = {sizeof META_KEY - 1, META_KEY}, val = {8, &seq};
            if (mdb_put(txn, l->dbi, &key, &val, 0))
                return mdb_txn_abort(txn), -1;
        }
        if (mdb_txn_commit(txn))
            return -1;
    }
    return 0;
}

static int lmdb_lookup(struct db *d, const void *k, size_t klen, void *out, size_t outlen)
{
    struct db_lmdb *l = (struct db_lmdb *)d;
    MDB_txn *txn;
    MDB_val key = {klen, (void *)k}, val;
    if (mdb_txn_begin(l->env, NULL, MDB_RDONLY, &txn))
        return -1;
    int rc = mdb_get(txn, l->dbi, &key, &val);
    if (rc == 0 && val.mv_size == outlen)
        memcpy(out, val.mv_data, outlen);
    mdb_txn_abort(txn);
    return rc == 0 ? 1 : rc == MDB_NOTFOUND ? 0 : -1;
}

static void lmdb_close(struct db *d)
{
    mdb_env_close(((struct db_lmdb *)d)->env);
    free(d);
}

/* ---- SQLite: WAL, synchronous=FULL, WITHOUT ROWID ---- */
struct db_sqlite {
    sqlite3 *db;
    sqlite3_stmt *put, *get;
};

static int sqlite_open(struct db **d, const char *dir)
{
    struct db_sqlite *s = calloc(1, sizeof *s);
    char path[4096];
    mkdir(dir, 0750);
    snprintf(path, sizeof path, "%s/index.sqlite", dir);
    if (!s || sqlite3_open(path, &s->db) ||
        sqlite3_exec(s->db,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA cache_size=-65536;"
                     "CREATE TABLE IF NOT EXISTS ids (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID;",
                     NULL, NULL, NULL) ||
        sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO ids VALUES (?1, ?2)", -1, &s->put,
                           NULL) ||
        sqlite3_prepare_v2(s->db, "SELECT v FROM ids WHERE k = ?1", -1, &s->get, NULL)) {
        fprintf(stderr, "sqlite: %s: %s\n", path, s ? sqlite3_errmsg(s->db) : "no memory");
        return -1;
    }
    *d = (struct db *)s;
    return 0;
}

static int sqlite_bind_put(struct db_sqlite *s, const void *k, int klen, const void *v, int vlen)
{
    sqlite3_bind_blob(s->put, 1, k, klen, SQLITE_STATIC);
    sqlite3_bind_blob(s->put, 2, v, vlen, SQLITE_STATIC);
    int rc = sqlite3_step(s->put);
    sqlite3_reset(s->put);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int sqlite_put(struct db *d, uint64_t first, size_t n)
{
    struct db_sqlite *s = (struct db_sqlite *)d;
    if (sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL))
        return -1;
    for (uint64_t i = first; i < first + n; i++) {
        unsigned char k[16], v[VAL_LEN];
        key_of(i, 0, k);
        val_of(i, v);
        if (sqlite_bind_put(s, k, 16, v, VAL_LEN))
            return -1;
    }
    uint64_t seq = first + n - 1;
    if (sqlite_bind_put(s, META_KEY, sizeof META_KEY - 1, &seq, 8))
        return -1;
    return sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) ? -1 : 0;
}

static int sqlite_lookup(struct db *d, const void *k, size_t klen, void *out, size_t outlen)
{
    struct db_sqlite *s = (struct db_sqlite *)d;
    sqlite3_bind_blob(s->get, 1, k, (int)klen, SQLITE_STATIC);
    int rc = sqlite3_step(s->get), found = 0;
    if (rc == SQLITE_ROW && (size_t)sqlite3_column_bytes(s->get, 0) == outlen) {
        memcpy(out, sqlite3_column_blob(s->get, 0), outlen);
        found = 1;
    }
    sqlite3_reset(s->get);
    return rc == SQLITE_ROW ? found : rc == SQLITE_DONE ? 0 : -1;
}

static void sqlite_close(struct db *d)
{
    struct db_sqlite *s = (struct db_sqlite *)d;
    sqlite3_finalize(s->put);
    sqlite3_finalize(s->get);
    sqlite3_close(s->db);
    free(s);
}

/* ---- RocksDB: a synced WAL write per transaction, a Bloom filter, a 64 MB block cache ---- */
struct db_rocks {
    rocksdb_t *db;
    rocksdb_options_t *opt;
    rocksdb_writeoptions_t *wo;
    rocksdb_readoptions_t *ro;
};

static int rocks_open(struct db **d, const char *dir)
{
    struct db_rocks *r = calloc(1, sizeof *r);
    if (!r)
        return -1;
    char *err = NULL;
    r->opt = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(r->opt, 1);
    rocksdb_block_based_table_options_t *t = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_filter_policy(t, rocksdb_filterpolicy_create_bloom(10));
    rocksdb_block_based_options_set_block_cache(t, rocksdb_cache_create_lru((size_t)64 << 20));
    rocksdb_options_set_block_based_table_factory(r->opt, t);
    r->db = rocksdb_open(r->opt, dir, &err);
    if (err) {
        fprintf(stderr, "rocksdb: %s\n", err);
        rocksdb_free(err);
        rocksdb_options_destroy(r->opt);
        free(r);
        return -1;
    }
    r->wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(r->wo, 1);
    r->ro = rocksdb_readoptions_create();
    *d = (struct db *)r;
    return 0;
}

static int rocks_put(struct db *d, uint64_t first, size_t n)
{
    struct db_rocks *r = (struct db_rocks *)d;
    rocksdb_writebatch_t *b = rocksdb_writebatch_create();
    for (uint64_t i = first; i < first + n; i++) {
        unsigned char k[16], v[VAL_LEN];
        key_of(i, 0, k);
        val_of(i, v);
        rocksdb_writebatch_put(b, (const char *)k, 16, (const char *)v, VAL_LEN);
    }
    uint64_t seq = first + n - 1;
    rocksdb_writebatch_put(b, META_KEY, sizeof META_KEY - 1, (const char *)&seq, 8);
    char *err = NULL;
    rocksdb_write(r->db, r->wo, b, &err);
    rocksdb_writebatch_destroy(b);
    return err ? -1 : 0;
}

static int rocks_lookup(struct db *d, const void *k, size_t klen, void *out, size_t outlen)
{
    struct db_rocks *r = (struct db_rocks *)d;
    char *err = NULL;
    size_t len = 0;
    char *v = rocksdb_get(r->db, r->ro, k, klen, &len, &err);
    if (err)
        return -1;
    if (v && len == outlen)
        memcpy(out, v, outlen);
    int found = v != NULL;
    rocksdb_free(v);
    return found;
}

static void rocks_close(struct db *d)
{
    struct db_rocks *r = (struct db_rocks *)d;
    rocksdb_close(r->db);
    free(r);
}

static const struct engine engines[] = {
    {"index", index_open, index_put, NULL, index_get, index_durable, index_close},
    {"lmdb", lmdb_open, lmdb_put, lmdb_lookup, NULL, NULL, lmdb_close},
    {"sqlite", sqlite_open, sqlite_put, sqlite_lookup, NULL, NULL, sqlite_close},
    {"rocksdb", rocks_open, rocks_put, rocks_lookup, NULL, NULL, rocks_close},
};

/* Id i (or an absent one): 1 found (val filled), 0 absent, <0 an error. */
static int get(const struct engine *e, struct db *d, uint64_t i, int absent,
               unsigned char val[VAL_LEN])
{
    if (e->get_id)
        return e->get_id(d, i, absent, val);
    unsigned char k[16];
    key_of(i, absent, k);
    return e->lookup(d, k, 16, val, VAL_LEN);
}

static uint64_t durable_seq(const struct engine *e, struct db *d)
{
    uint64_t seq = 0;
    if (e->durable_id)
        return e->durable_id(d);
    e->lookup(d, META_KEY, sizeof META_KEY - 1, &seq, 8);
    return seq;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

static int by_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* M lookups of random stored (or absent) ids: mean and p99.9 in ns. Returns the number of
 * wrong answers. */
static size_t lookups(const struct engine *e, struct db *d, uint64_t n, int absent, size_t m)
{
    uint64_t *ns = malloc(m * sizeof *ns), x = 88172645463325252u;
    size_t bad = 0;
    uint64_t total = 0;
    for (size_t j = 0; j < m; j++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t i = 1 + x % n;
        unsigned char v[VAL_LEN], want[VAL_LEN];
        uint64_t t0 = now_ns();
        int rc = get(e, d, i, absent, v);
        ns[j] = now_ns() - t0;
        total += ns[j];
        val_of(i, want);
        if (rc != !absent || (rc == 1 && memcmp(v, want, VAL_LEN) != 0))
            bad++;
    }
    qsort(ns, m, sizeof *ns, by_value);
    printf("%s lookup %s: %zu, mean %.2f us, p99.9 %.2f us, wrong %zu\n", e->name,
           absent ? "absent" : "stored", m, (double)total / (double)m / 1e3,
           (double)ns[m - m / 1000 - 1] / 1e3, bad);
    free(ns);
    return bad;
}

static int do_insert(const struct engine *e, struct db *d, uint64_t n, size_t txn)
{
    size_t ntx = (size_t)((n + txn - 1) / txn);
    uint64_t *ns = malloc(ntx * sizeof *ns), t0 = now_ns();
    for (size_t j = 0; j < ntx; j++) {
        uint64_t first = 1 + j * txn, t1 = now_ns();
        size_t m = first + txn - 1 <= n ? txn : (size_t)(n - first + 1);
        if (e->put(d, first, m) != 0) {
            fprintf(stderr, "%s: put of %" PRIu64 "..%" PRIu64 " failed\n", e->name, first,
                    first + m - 1);
            return 1;
        }
        ns[j] = now_ns() - t1;
    }
    double s = (double)(now_ns() - t0) / 1e9;
    qsort(ns, ntx, sizeof *ns, by_value);
    printf("%s insert: %" PRIu64 " ids in %zu transactions of %zu: %.2f s, %.0f ids/s, "
           "transaction p50 %.2f ms, p99.9 %.2f ms, max %.2f ms; VmRSS %ld kB\n",
           e->name, n, ntx, txn, s, (double)n / s, (double)ns[ntx / 2] / 1e6,
           (double)ns[ntx - ntx / 1000 - 1] / 1e6, (double)ns[ntx - 1] / 1e6, rss_kb());
    free(ns);
    size_t bad = lookups(e, d, n, 0, 200000);
    bad += lookups(e, d, n, 1, 200000);
    return bad != 0;
}

static int do_reopen(const struct engine *e, const char *dir, uint64_t n)
{
    struct db *d;
    uint64_t t0 = now_ns();
    if (e->open(&d, dir) != 0)
        return 1;
    uint64_t t1 = now_ns(), durable = durable_seq(e, d);
    size_t found = 0;
    for (uint64_t j = 0; j < 1000; j++) {
        unsigned char v[VAL_LEN];
        found += get(e, d, 1 + (j * 7919) % n, 0, v) == 1;
    }
    printf("%s reopen: open %.3f s, open + 1,000 lookups %.3f s, durable through %" PRIu64
           ", found %zu of 1000, VmRSS %ld kB\n",
           e->name, (double)(t1 - t0) / 1e9, (double)(now_ns() - t0) / 1e9, durable, found,
           rss_kb());
    e->close(d);
    return 0;
}

/* Every id 1..n: found with its own value, absent, or an error; the last two are what a
 * damaged engine does (a silent absence would dispatch a batch twice). Returns 1 unless all
 * were found. */
static int do_check(const struct engine *e, const char *dir, uint64_t n)
{
    struct db *d;
    if (e->open(&d, dir) != 0) {
        printf("%s check: open refused\n", e->name);
        return 1;
    }
    size_t ok = 0, absent = 0, wrong = 0, errors = 0;
    for (uint64_t i = 1; i <= n; i++) {
        unsigned char v[VAL_LEN], want[VAL_LEN];
        int rc = get(e, d, i, 0, v);
        val_of(i, want);
        if (rc < 0)
            errors++;
        else if (rc == 0)
            absent++;
        else if (memcmp(v, want, VAL_LEN) != 0)
            wrong++;
        else
            ok++;
    }
    printf("%s check: durable through %" PRIu64 "; of %" PRIu64
           " ids: %zu found, %zu absent, %zu wrong, %zu errors\n",
           e->name, durable_seq(e, d), n, ok, absent, wrong, errors);
    e->close(d);
    return ok != n;
}

/* A child inserts transactions and reports each committed one through a pipe; kill -9 after
 * `ms`; then every id the child saw committed must be found and durable_seq cover them. */
static int do_crash(const struct engine *e, const char *dir, size_t txn, unsigned ms)
{
    int p[2];
    if (pipe(p) != 0)
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        struct db *d;
        close(p[0]);
        if (e->open(&d, dir) != 0)
            _exit(2);
        for (uint64_t first = 1;; first += txn) {
            if (e->put(d, first, txn) != 0)
                _exit(3);
            uint64_t last = first + txn - 1;
            if (write(p[1], &last, 8) != 8)
                _exit(4);
        }
    }
    close(p[1]);
    struct timespec wait = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&wait, NULL);
    kill(pid, SIGKILL);
    uint64_t last = 0, got;
    while (read(p[0], &got, 8) == 8)
        last = got;
    waitpid(pid, NULL, 0);
    printf("%s crash: kill -9 after %u ms; the child saw %" PRIu64 " ids committed\n", e->name, ms,
           last);
    return last ? do_check(e, dir, last) : 1;
}

int main(int argc, char **argv)
{
    const struct engine *e = NULL;
    for (size_t i = 0; argc >= 4 && i < sizeof engines / sizeof engines[0]; i++)
        if (strcmp(argv[1], engines[i].name) == 0)
            e = &engines[i];
    if (!e) {
        fprintf(stderr, "usage: index_bakeoff index|lmdb|sqlite|rocksdb insert|reopen|crash|check"
                        " DIR ...\n");
        return 2;
    }
    const char *op = argv[2], *dir = argv[3];
    if (strcmp(op, "insert") == 0 && argc == 6) {
        struct db *d;
        if (e->open(&d, dir) != 0)
            return 1;
        int rc = do_insert(e, d, strtoull(argv[4], NULL, 10), strtoull(argv[5], NULL, 10));
        e->close(d);
        return rc;
    }
    if (strcmp(op, "reopen") == 0 && argc == 5)
        return do_reopen(e, dir, strtoull(argv[4], NULL, 10));
    if (strcmp(op, "check") == 0 && argc == 5)
        return do_check(e, dir, strtoull(argv[4], NULL, 10));
    if (strcmp(op, "crash") == 0 && argc == 6)
        return do_crash(e, dir, strtoull(argv[4], NULL, 10), (unsigned)atoi(argv[5]));
    fprintf(stderr, "index_bakeoff: bad arguments for %s\n", op);
    return 2;
}
