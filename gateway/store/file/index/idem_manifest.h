/* The manifest of the idempotency index: which runs make up the index and through which seq it
 * is durable (docs/journal.md §9). Replaced atomically; everything it does not list is swept. */
#ifndef SHARDGATE_GW_IDEM_MANIFEST_H
#define SHARDGATE_GW_IDEM_MANIFEST_H

#include <openssl/sha.h>
#include <stddef.h>
#include <stdint.h>

#define GW_IDEM_MANIFEST "manifest.json"
#define GW_IDEM_LOCK "lock"

struct gw_idem_manifest_run {
    uint64_t id, count;
    unsigned char sha256[SHA256_DIGEST_LENGTH];
};

struct gw_idem_manifest {
    uint64_t durable_seq;
    uint64_t next_run; /* the id the next run file gets */
    size_t nruns;
    struct gw_idem_manifest_run *runs;
};

/* Replaces <dir>/manifest.json (temp file, fsync, rename, fsync of dir). Returns 0 or -errno. */
int gw_idem_manifest_write(const char *dir, const struct gw_idem_manifest *m);

/* Reads and checks <dir>/manifest.json. Returns 0; -ENOENT when there is none; -EINVAL with
 * *why when it is unusable; -ENOMEM. */
int gw_idem_manifest_read(const char *dir, struct gw_idem_manifest *m, const char **why);

void gw_idem_manifest_free(struct gw_idem_manifest *m);

/* Unlinks every file of <dir> that `m` does not list (leftover runs and temp files). */
void gw_idem_manifest_sweep(const char *dir, const struct gw_idem_manifest *m);

#endif
