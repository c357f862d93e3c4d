/* Batches (docs/contract.md §4): strict parsing, every fault named by its JSON path, and the
 * fingerprint that decides whether two batches have the same content. */
#ifndef SHARDGATE_GW_BATCH_H
#define SHARDGATE_GW_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define GW_BATCH_ID_MAX 128
#define GW_CHANGE_ID_MAX 128
#define GW_KEY_MAX 1024
#define GW_MAX_CHANGES_DEFAULT 100000
#define GW_FINGERPRINT_LEN 32

struct gw_change {
    const char *id;
    size_t id_len;
    const char *key;
    size_t key_len;
    uint64_t size;
};

struct gw_batch {
    void *doc; /* the parsed document, which owns the strings below */
    const char *batch_id;
    size_t batch_id_len;
    struct gw_change *changes;
    size_t count;
    uint64_t total_size;
    /* SHA-256 of the canonical batch: compact, keys batch_id, changes / id, key, size. */
    unsigned char fingerprint[GW_FINGERPRINT_LEN];
};

/* Parses and validates a batch of at most `max_changes` changes. Returns 0, -EINVAL with
 * err->path naming the offending value, or -ENOMEM. On error nothing needs freeing. */
int gw_batch_parse(const char *data, size_t len, size_t max_changes, struct gw_batch *out,
                   struct gw_error *err);

void gw_batch_free(struct gw_batch *b);

/* The fast way in for a batch sent in its canonical form (docs/journal.md §3.1), which
 * gw_batch_parse tries first (batch_canonical.c). Reads `data` when it is exactly a canonical
 * batch of 1..max_changes changes whose strings need no escape: fills out (ids and keys in a
 * copy out->doc owns, the fingerprint the SHA-256 of the body) and returns 1. Returns 0 with out
 * zeroed for any other body, which the strict reader must then read; -ENOMEM. Duplicate ids and
 * the total size are the caller's to check. */
int gw_batch_read_canonical(const char *data, size_t len, size_t max_changes, struct gw_batch *out);

#endif
