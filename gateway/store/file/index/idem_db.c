/* The idempotency index on RocksDB (docs/journal.md §9, docs/decisions.md §15): no write-ahead
 * log (a start re-inserts from the journal whatever the database is not durable through), a
 * flush at every persist, a Bloom filter and a checksum on every block. */
#include "idem_db.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"
#include "log.h"

#define KEY_LEN 16
#define VAL_LEN 48
#define FORMAT_KEY "format" /* not 16 bytes: never a batch id's key */
#define FORMAT "shardgate-idempotency-index 1"
#define DURABLE_KEY "durable_seq"
/* The highest seq of any entry, written with it: what the database holds past durable_seq (a
 * memtable flushed on its own before a crash) is seen at the next open (docs/journal.md §9). */
#define TOP_KEY "top_seq"
#define LOCK_FILE "lock" /* the index's own flock (idem_open.c): kept by a sweep */

struct gw_idem_db {
    rocksdb_t *db;
    rocksdb_options_t *options;
    rocksdb_block_based_table_options_t *table;
    rocksdb_cache_t *cache;
    rocksdb_readoptions_t *read;
    rocksdb_writeoptions_t *write;
    rocksdb_flushoptions_t *flush;
    atomic_int corrupt_logged;
    pthread_mutex_t top_lock; /* an entry and top_seq are written in one batch, in seq order */
    uint64_t top_seq;
    char dir[4096];
};

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static void key_bytes(struct gw_idem_key key, unsigned char out[KEY_LEN])
{
    for (int i = 0; i < 8; i++) {
        out[i] = (unsigned char)(key.hi >> (56 - 8 * i));
        out[8 + i] = (unsigned char)(key.lo >> (56 - 8 * i));
    }
}

/* The value: fp_prefix, segment, offset, seq, ack_ms (64 bits each), len (32), flags (32),
 * little-endian (docs/journal.md §9). */
static void encode(const struct gw_idem_rec *r, unsigned char v[VAL_LEN])
{
    put_le(v, r->fp_prefix, 8);
    put_le(v + 8, r->segment, 8);
    put_le(v + 16, r->offset, 8);
    put_le(v + 24, r->seq, 8);
    put_le(v + 32, r->ack_ms, 8);
    put_le(v + 40, r->len, 4);
    put_le(v + 44, r->flags, 4);
}

static void decode(const unsigned char v[VAL_LEN], struct gw_idem_rec *r)
{
    r->fp_prefix = get_le(v, 8);
    r->segment = get_le(v + 8, 8);
    r->offset = get_le(v + 16, 8);
    r->seq = get_le(v + 24, 8);
    r->ack_ms = get_le(v + 32, 8);
    r->len = (uint32_t)get_le(v + 40, 4);
    r->flags = (uint32_t)get_le(v + 44, 4);
}

void gw_idem_log_unusable(const char *dir, const char *why)
{
    struct gw_buf f;
    gw_buf_init(&f);
    gw_log_str(&f, "dir", dir);
    gw_log_str(&f, "reason", why);
    gw_log_event("index_unusable", &f);
}

static void log_corrupt(struct gw_idem_db *d, const char *why)
{
    if (atomic_exchange(&d->corrupt_logged, 1))
        return;
    struct gw_buf f;
    gw_buf_init(&f);
    gw_log_str(&f, "dir", d->dir);
    gw_log_str(&f, "error", why);
    gw_log_event("index_corrupt", &f);
}

static void set_options(struct gw_idem_db *d)
{
    d->options = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(d->options, 1);
    rocksdb_options_set_compression(d->options, rocksdb_no_compression); /* SHA-256 keys */
    rocksdb_options_set_write_buffer_size(d->options, (size_t)32 << 20);
    /* a Bloom filter over each memtable's keys: a new batch id (most lookups) skips its search */
    rocksdb_options_set_memtable_prefix_bloom_size_ratio(d->options, 0.1);
    rocksdb_options_set_memtable_whole_key_filtering(d->options, 1);
    rocksdb_options_set_info_log_level(d->options, 3); /* errors only, in index/LOG */
    rocksdb_options_set_keep_log_file_num(d->options, 2);
    d->table = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_filter_policy(d->table, rocksdb_filterpolicy_create_bloom(10));
    d->cache = rocksdb_cache_create_lru((size_t)32 << 20);
    rocksdb_block_based_options_set_block_cache(d->table, d->cache);
    rocksdb_options_set_block_based_table_factory(d->options, d->table);
    d->read = rocksdb_readoptions_create(); /* checksums verified on every read */
    d->write = rocksdb_writeoptions_create();
    rocksdb_writeoptions_disable_WAL(d->write, 1);
    d->flush = rocksdb_flushoptions_create();
    rocksdb_flushoptions_set_wait(d->flush, 1);
}

void gw_idem_db_sweep(const char *dir)
{
    DIR *dh = opendir(dir);
    struct dirent *e;
    char path[8192];
    while (dh && (e = readdir(dh)) != NULL) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, LOCK_FILE) == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        gw_io.unlink(path);
    }
    if (dh)
        closedir(dh);
}

/* 1 with the value's bytes in `out` (exactly `len` of them), 0 absent, -1 with *err. */
static int get_raw(struct gw_idem_db *d, const char *k, size_t klen, void *out, size_t len,
                   char **err)
{
    size_t got = 0;
    char *v = rocksdb_get(d->db, d->read, k, klen, &got, err);
    if (*err)
        return -1;
    int found = v != NULL;
    if (v && got == len)
        memcpy(out, v, len);
    else if (v)
        found = -1, *err = strdup("a value of an unexpected size");
    rocksdb_free(v);
    return found;
}

static int put_raw(struct gw_idem_db *d, const char *k, size_t klen, const void *v, size_t len,
                   char **err)
{
    rocksdb_put(d->db, d->write, k, klen, v, len, err);
    return *err ? -1 : 0;
}

/* Opens the database and checks its format. Returns NULL, or why it is unusable (in `why`). */
static const char *try_open(struct gw_idem_db *d, uint64_t *durable_seq, char *why, size_t n)
{
    char *err = NULL, format[sizeof(FORMAT) - 1];
    unsigned char seq[8] = {0};
    d->db = rocksdb_open(d->options, d->dir, &err);
    int rc = err ? -1 : get_raw(d, FORMAT_KEY, strlen(FORMAT_KEY), format, sizeof(format), &err);
    if (rc == 0) /* a new database */
        rc = put_raw(d, FORMAT_KEY, strlen(FORMAT_KEY), FORMAT, strlen(FORMAT), &err);
    else if (rc == 1 && memcmp(format, FORMAT, sizeof(format)) != 0)
        rc = -1, err = strdup("another format");
    if (rc >= 0)
        rc = get_raw(d, DURABLE_KEY, strlen(DURABLE_KEY), seq, sizeof(seq), &err);
    *durable_seq = rc == 1 ? get_le(seq, 8) : 0;
    if (rc >= 0)
        rc = get_raw(d, TOP_KEY, strlen(TOP_KEY), seq, sizeof(seq), &err);
    d->top_seq = rc == 1 ? get_le(seq, 8) : 0;
    if (rc >= 0)
        return NULL;
    snprintf(why, n, "%s", err ? err : "out of memory");
    rocksdb_free(err);
    if (d->db)
        rocksdb_close(d->db);
    d->db = NULL;
    return why;
}

static void free_options(struct gw_idem_db *d)
{
    rocksdb_flushoptions_destroy(d->flush);
    rocksdb_writeoptions_destroy(d->write);
    rocksdb_readoptions_destroy(d->read);
    rocksdb_options_destroy(d->options);
    rocksdb_block_based_options_destroy(d->table);
    rocksdb_cache_destroy(d->cache);
}

struct gw_idem_db *gw_idem_db_open(const char *dir, uint64_t *durable_seq, char *msg, size_t n)
{
    struct gw_idem_db *d = calloc(1, sizeof(*d));
    if (!d) {
        snprintf(msg, n, "out of memory");
        return NULL;
    }
    snprintf(d->dir, sizeof(d->dir), "%s", dir);
    pthread_mutex_init(&d->top_lock, NULL);
    set_options(d);
    char why[512];
    const char *unusable = try_open(d, durable_seq, why, sizeof(why));
    if (unusable) { /* derived files: start empty, the caller re-inserts from the journal */
        gw_idem_log_unusable(dir, unusable);
        gw_idem_db_sweep(dir);
        if (try_open(d, durable_seq, why, sizeof(why))) {
            snprintf(msg, n, "index: %s: %s", dir, why);
            free_options(d);
            pthread_mutex_destroy(&d->top_lock);
            free(d);
            return NULL;
        }
    }
    return d;
}

void gw_idem_db_close(struct gw_idem_db *d)
{
    if (!d)
        return;
    rocksdb_close(d->db); /* flushes what the memtable holds */
    free_options(d);
    pthread_mutex_destroy(&d->top_lock);
    free(d);
}

int gw_idem_db_get(struct gw_idem_db *d, struct gw_idem_key key, struct gw_idem_rec *rec)
{
    unsigned char k[KEY_LEN], v[VAL_LEN];
    char *err = NULL;
    key_bytes(key, k);
    int rc = get_raw(d, (const char *)k, KEY_LEN, v, VAL_LEN, &err);
    if (rc < 0) {
        log_corrupt(d, err ? err : "out of memory");
        rocksdb_free(err);
        return -EIO;
    }
    if (rc == 1) {
        rec->key = key;
        decode(v, rec);
    }
    return rc;
}

int gw_idem_db_put(struct gw_idem_db *d, const struct gw_idem_rec *rec)
{
    unsigned char k[KEY_LEN], v[VAL_LEN], top[8];
    char *err = NULL;
    key_bytes(rec->key, k);
    encode(rec, v);
    rocksdb_writebatch_t *b = rocksdb_writebatch_create();
    rocksdb_writebatch_put(b, (const char *)k, KEY_LEN, (const char *)v, VAL_LEN);
    pthread_mutex_lock(&d->top_lock);
    if (rec->seq > d->top_seq) { /* in the same batch: no flush holds the entry without it */
        put_le(top, rec->seq, 8);
        rocksdb_writebatch_put(b, TOP_KEY, strlen(TOP_KEY), (const char *)top, sizeof(top));
    }
    rocksdb_write(d->db, d->write, b, &err);
    if (!err && rec->seq > d->top_seq)
        d->top_seq = rec->seq;
    pthread_mutex_unlock(&d->top_lock);
    rocksdb_writebatch_destroy(b);
    if (!err)
        return 0;
    log_corrupt(d, err);
    rocksdb_free(err);
    return -EIO;
}

uint64_t gw_idem_db_top_seq(struct gw_idem_db *d)
{
    pthread_mutex_lock(&d->top_lock);
    uint64_t seq = d->top_seq;
    pthread_mutex_unlock(&d->top_lock);
    return seq;
}

int gw_idem_db_persist(struct gw_idem_db *d, uint64_t durable_seq, char *msg, size_t n)
{
    unsigned char seq[8];
    char *err = NULL;
    put_le(seq, durable_seq, 8);
    if (put_raw(d, DURABLE_KEY, strlen(DURABLE_KEY), seq, sizeof(seq), &err) == 0)
        rocksdb_flush(d->db, d->flush, &err);
    if (!err)
        return 0;
    snprintf(msg, n, "%s: %s", d->dir, err);
    rocksdb_free(err);
    return -EIO;
}
