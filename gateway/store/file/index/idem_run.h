/* A run: an immutable file of index records sorted by key, mmap'd read-only
 * (docs/journal.md §9). Written once (temp name, fsync, rename), never modified. Its records and
 * filter are checked block by block, each block the first time a lookup reads it, against a
 * table of block digests that is itself checked at open: opening reads 1/512 of the run. */
#ifndef SHARDGATE_GW_IDEM_RUN_H
#define SHARDGATE_GW_IDEM_RUN_H

#include <openssl/sha.h>
#include <stdatomic.h>
#include <stdint.h>

#include "fileio.h"
#include "idem_rec.h"

struct gw_idem_run {
    uint64_t id; /* the file is run-<id, 20 digits>.idx */
    uint64_t count;
    const struct gw_idem_rec *recs; /* count records, sorted by key, in the map */
    const uint64_t *bloom;          /* bloom_blocks 64-byte blocks after the records, in the map */
    size_t bloom_blocks;
    void *map;
    size_t size;
    size_t payload; /* bytes of records and filter, after the header */
    size_t blocks;  /* GW_IDEM_RUN_BLOCK (idem_run_file.h) bytes of the payload each (last short) */
    unsigned char *digests; /* SHA-256 of each block, read and checked at open */
    atomic_uchar *checked;  /* per block: unchecked, good or bad (idem_run_read.c) */
    unsigned char sha256[SHA256_DIGEST_LENGTH]; /* of the digest table */
    atomic_uint refs;
};

/* A run being written, record by record in key order. */
struct gw_idem_run_writer {
    struct gw_durable_file file; /* run-<id>.idx, written as run-<id>.idx.tmp */
    SHA256_CTX block_sha;        /* of the block being written */
    size_t block_fill;           /* its bytes so far */
    unsigned char *digests;      /* one per block, filled as blocks complete */
    size_t blocks, block_at;     /* how many the run has; how many are done */
    uint64_t expected, written;
    struct gw_idem_key last;
    uint64_t *bloom; /* the filter, built as records are put, written by finish */
    size_t bloom_blocks;
    unsigned char buf[1 << 16];
    size_t used;
};

/* "run-<id, 20 digits>.idx" into name (at least 32 bytes). */
void gw_idem_run_name(char *name, size_t size, uint64_t id);

/* Starts <dir>/run-<id>.idx.tmp for exactly `count` records. Returns 0 or -errno. */
int gw_idem_run_begin(struct gw_idem_run_writer *w, const char *dir, uint64_t id, uint64_t count);
/* Appends a record (keys strictly increasing). Returns 0 or -errno. */
int gw_idem_run_put(struct gw_idem_run_writer *w, const struct gw_idem_rec *rec);
/* Writes the filter and the block digests, flushes, and puts the run in place as run-<id>.idx
 * (gw_durable_commit); *sha256 is the SHA-256 of the digest table (which names every byte of the
 * records and the filter). Returns 0 or -errno (the temp file removed). */
int gw_idem_run_finish(struct gw_idem_run_writer *w, unsigned char sha256[SHA256_DIGEST_LENGTH]);
/* Drops a run being written (the temp file removed). */
void gw_idem_run_abandon(struct gw_idem_run_writer *w);

/* Maps <dir>/run-<id>.idx; checks its header, size (`count` records) and the SHA-256 of its
 * digest table against `sha256`. With `verify` every block is checked when first read; without
 * (a run this process just wrote) the blocks are taken as good. Returns a run with one
 * reference, or NULL with *why set. */
struct gw_idem_run *gw_idem_run_open(const char *dir, uint64_t id, uint64_t count,
                                     const unsigned char sha256[SHA256_DIGEST_LENGTH], int verify,
                                     const char **why);
void gw_idem_run_ref(struct gw_idem_run *r);
/* Drops a reference; the last one unmaps. */
void gw_idem_run_unref(struct gw_idem_run *r);

/* Looks `key` up: 1 with *rec set, 0 when absent, -EIO when a block it had to read differs from
 * its digest (logged once per block as index_block_corrupt). The filter answers most absent keys
 * without a record page. */
int gw_idem_run_find(const struct gw_idem_run *r, struct gw_idem_key key,
                     const struct gw_idem_rec **rec);

/* Checks every block not yet checked (a merge reads the whole run). Returns 0 or -EIO. */
int gw_idem_run_check_all(const struct gw_idem_run *r);

#endif
