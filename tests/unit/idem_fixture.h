/* Helpers shared by the idempotency index tests: a scratch state dir, ids, fingerprints and
 * receipt locations derived from a number, so that every check can name exact values. */
#ifndef SHARDGATE_TEST_IDEM_FIXTURE_H
#define SHARDGATE_TEST_IDEM_FIXTURE_H

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "idempotency.h"

static inline void fixture_id(char *id, size_t size, uint64_t n)
{
    snprintf(id, size, "batch-%08llu", (unsigned long long)n);
}

static inline void fixture_fp(unsigned char fp[GW_FINGERPRINT_LEN], uint64_t n, int variant)
{
    memset(fp, 0, GW_FINGERPRINT_LEN);
    for (int i = 0; i < 8; i++)
        fp[i] = (unsigned char)(n >> (8 * i));
    fp[8] = (unsigned char)variant;
    if (variant)
        fp[0] ^= 0x80; /* another batch differs within the stored prefix */
}

static inline struct gw_idem_ref fixture_ref(uint64_t seq)
{
    struct gw_idem_ref ref = {1 + seq / 1000, 100 * seq, 50 + seq % 7, seq, 0};
    return ref;
}

/* A fresh directory under /tmp; `dir` gets its path. */
static inline void fixture_mkdtemp(char dir[64])
{
    snprintf(dir, 64, "/tmp/sg-idem-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(2);
    }
}

/* Flips bit 0 of the byte at `at` of `path` (an index file damaged on disk). Returns 0 or -1. */
static inline int fixture_flip_byte(const char *path, off_t at)
{
    int fd = open(path, O_RDWR);
    unsigned char c = 0;
    int rc = fd >= 0 && pread(fd, &c, 1, at) == 1 ? 0 : -1;
    c ^= 1;
    if (rc == 0 && pwrite(fd, &c, 1, at) != 1)
        rc = -1;
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Removes the files of <dir>/index, then <dir>/index and <dir>. */
static inline void fixture_rmtree(const char *dir)
{
    char sub[512], path[1024];
    snprintf(sub, sizeof(sub), "%s/index", dir);
    DIR *d = opendir(sub);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", sub, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(sub);
    rmdir(dir);
}

/* Number of entries of <dir>/index (without . and ..). */
static inline int fixture_count_files(const char *dir)
{
    char sub[512];
    snprintf(sub, sizeof(sub), "%s/index", dir);
    DIR *d = opendir(sub);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* Claims and commits id n at seq n; returns the verdict of the claim. */
static inline enum gw_idem_verdict fixture_ack(struct gw_idem *t, uint64_t n)
{
    char id[32];
    unsigned char fp[GW_FINGERPRINT_LEN];
    enum gw_idem_verdict v;
    struct gw_idem_ref ref;
    fixture_id(id, sizeof(id), n);
    fixture_fp(fp, n, 0);
    if (gw_idem_claim(t, id, strlen(id), fp, &v, &ref) != 0)
        return (enum gw_idem_verdict) - 1;
    if (v == GW_IDEM_NEW)
        gw_idem_commit(t, id, strlen(id), fixture_ref(n));
    return v;
}

/* 1 when id n is found with exactly fixture_ref(n). */
static inline int fixture_found(struct gw_idem *t, uint64_t n)
{
    char id[32];
    struct gw_idem_ref ref, want = fixture_ref(n);
    fixture_id(id, sizeof(id), n);
    return gw_idem_find(t, id, strlen(id), &ref) == 0 && ref.segment == want.segment &&
           ref.offset == want.offset && ref.len == want.len && ref.seq == want.seq;
}

#endif
