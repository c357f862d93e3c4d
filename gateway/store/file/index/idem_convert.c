/* The index files of the earlier, hand-written version (docs/journal.md §9.1): manifest.json and
 * its runs, every checksum checked, their records stored in the database. */
#include "idem_convert.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "io.h"

#define MANIFEST "manifest.json"
#define SHA_KEY ",\"sha256\":\""
#define RUN_HEADER 64
#define RUN_BLOCK 16384u
#define REC_SIZE 64u

_Static_assert(sizeof(struct gw_idem_rec) == REC_SIZE, "a run record is a gw_idem_rec");

int gw_idem_convert_present(const char *dir)
{
    DIR *dh = opendir(dir);
    struct dirent *e;
    int found = 0;
    while (dh && !found && (e = readdir(dh)) != NULL)
        found = strcmp(e->d_name, MANIFEST) == 0 || strncmp(e->d_name, "run-", 4) == 0;
    if (dh)
        closedir(dh);
    return found;
}

void gw_idem_convert_remove(const char *dir)
{
    DIR *dh = opendir(dir);
    struct dirent *e;
    char path[8192];
    while (dh && (e = readdir(dh)) != NULL) {
        if (strcmp(e->d_name, MANIFEST) != 0 && strncmp(e->d_name, "run-", 4) != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        gw_io.unlink(path);
    }
    if (dh)
        closedir(dh);
}

static int hex_is(const char *hex, const unsigned char *bytes, size_t n)
{
    char want[2 * SHA256_DIGEST_LENGTH + 1];
    for (size_t i = 0; i < n; i++)
        snprintf(want + 2 * i, 3, "%02x", bytes[i]);
    return hex && strlen(hex) == 2 * n && strcmp(hex, want) == 0;
}

/* The manifest's own checksum: the SHA-256 of its bytes before the last ,"sha256":". */
static const char *check_manifest_sum(const char *text)
{
    const char *at = NULL;
    for (const char *p = strstr(text, SHA_KEY); p; p = strstr(p + 1, SHA_KEY))
        at = p;
    if (!at)
        return "manifest has no sha256";
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)text, (size_t)(at - text), md);
    char hex[2 * SHA256_DIGEST_LENGTH + 1];
    snprintf(hex, sizeof(hex), "%.64s", at + strlen(SHA_KEY));
    return hex_is(hex, md, sizeof(md)) ? NULL : "manifest checksum mismatch";
}

/* Checks run `data` (`size` bytes) against its manifest entry: header, size, the digest table's
 * SHA-256, each payload block's. Returns NULL or why not. */
static const char *check_run(const unsigned char *data, size_t size, uint64_t count,
                             const char *sha_hex)
{
    uint64_t filter = count ? (count * 10 + 511) / 512 : 0;
    size_t payload = (size_t)(count * REC_SIZE + filter * 64);
    size_t blocks = (payload + RUN_BLOCK - 1) / RUN_BLOCK;
    uint32_t version, rec_size;
    uint64_t n, b;
    if (size < RUN_HEADER || memcmp(data, "SGIDXRUN", 8) != 0)
        return "run header malformed";
    memcpy(&version, data + 8, 4);
    memcpy(&rec_size, data + 12, 4);
    memcpy(&n, data + 16, 8);
    memcpy(&b, data + 24, 8);
    if (version != 3 || rec_size != REC_SIZE || n != count || b != filter)
        return "run header malformed";
    if (size != RUN_HEADER + payload + blocks * SHA256_DIGEST_LENGTH)
        return "run size differs from its record count";
    const unsigned char *digests = data + RUN_HEADER + payload;
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(digests, blocks * SHA256_DIGEST_LENGTH, md);
    if (!hex_is(sha_hex, md, sizeof(md)))
        return "run checksum mismatch";
    for (size_t i = 0; i < blocks; i++) {
        size_t at = i * RUN_BLOCK, len = payload - at < RUN_BLOCK ? payload - at : RUN_BLOCK;
        SHA256(data + RUN_HEADER + at, len, md);
        if (memcmp(md, digests + i * SHA256_DIGEST_LENGTH, sizeof(md)) != 0)
            return "run block checksum mismatch";
    }
    return NULL;
}

/* Checks run `id` and stores its records. Returns NULL or why not. */
static const char *convert_run(const char *dir, struct gw_idem_db *db, json_t *entry, uint64_t *ids)
{
    json_t *id = json_object_get(entry, "id"), *count = json_object_get(entry, "count");
    const char *sha = json_string_value(json_object_get(entry, "sha256"));
    if (!json_is_integer(id) || !json_is_integer(count) || !sha)
        return "manifest run entry malformed";
    char path[8192];
    snprintf(path, sizeof(path), "%s/run-%020llu.idx", dir,
             (unsigned long long)json_integer_value(id));
    char *data;
    size_t size;
    if (gw_file_read(path, &data, &size) != 0)
        return "cannot read a run";
    uint64_t n = (uint64_t)json_integer_value(count);
    const char *why = check_run((const unsigned char *)data, size, n, sha);
    for (uint64_t i = 0; !why && i < n; i++) {
        struct gw_idem_rec r;
        memcpy(&r, data + RUN_HEADER + i * REC_SIZE, sizeof(r));
        if (gw_idem_db_put(db, &r) != 0)
            why = "cannot store a record";
    }
    *ids += why ? 0 : n;
    free(data);
    return why;
}

const char *gw_idem_convert(const char *dir, struct gw_idem_db *db, uint64_t *durable_seq,
                            uint64_t *ids)
{
    char path[8192], *text;
    size_t len;
    snprintf(path, sizeof(path), "%s/%s", dir, MANIFEST);
    *ids = 0;
    if (gw_file_read(path, &text, &len) != 0)
        return "cannot read manifest.json";
    const char *why = check_manifest_sum(text);
    json_t *root = why ? NULL : json_loads(text, 0, NULL);
    json_t *runs = json_object_get(root, "runs");
    json_t *seq = json_object_get(root, "durable_seq");
    if (!why && (!json_is_array(runs) || !json_is_integer(seq) ||
                 json_integer_value(json_object_get(root, "version")) != 1))
        why = "manifest malformed";
    for (size_t i = 0; !why && i < json_array_size(runs); i++)
        why = convert_run(dir, db, json_array_get(runs, i), ids);
    if (!why)
        *durable_seq = (uint64_t)json_integer_value(seq);
    json_decref(root);
    free(text);
    return why;
}
