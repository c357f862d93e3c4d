/* Journal replay under test: writes bytes as <dir>/journal.jsonl, replays them with
 * gw_journal_open and checks what the replay reports against the bytes. */
#ifndef SHARDGATE_FUZZ_JOURNAL_CHECK_H
#define SHARDGATE_FUZZ_JOURNAL_CHECK_H

#include "fuzz_common.h"
#include "journal.h"

struct fuzz_replay {
    const uint8_t *data;
    size_t size;
    uint64_t last_seq;
    size_t records;
    uint64_t last_offset, last_len; /* the last visited receipt's bytes */
};

/* Every visited record lies inside the file, in seq order, and its receipt bytes are exactly
 * the JSON object the replay decoded. */
static int fuzz_replay_visit(void *ctx, const struct gw_journal_record *rec, struct gw_error *err)
{
    struct fuzz_replay *r = ctx;
    (void)err;
    if (!rec->receipt) /* an epoch record */
        return 0;
    FUZZ_REQUIRE(rec->seq == r->last_seq + 1);
    FUZZ_REQUIRE(rec->receipt_len >= 2 && rec->receipt_offset <= r->size &&
                 rec->receipt_len <= r->size - rec->receipt_offset);
    const char *bytes = (const char *)r->data + rec->receipt_offset;
    FUZZ_REQUIRE(bytes[0] == '{' && bytes[rec->receipt_len - 1] == '}');
    json_error_t jerr;
    json_t *again =
        json_loadb(bytes, rec->receipt_len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    FUZZ_REQUIRE(again != NULL && json_equal(again, rec->receipt));
    json_decref(again);
    r->last_seq = rec->seq;
    r->records++;
    r->last_offset = rec->receipt_offset;
    r->last_len = rec->receipt_len;
    return 0;
}

/* Reads a whole file into a malloc'd buffer (NULL and *len 0 when it does not exist). */
static inline char *fuzz_slurp(const char *path, size_t *len)
{
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0;
    for (;;) {
        if (*len == cap) {
            cap = cap ? cap * 2 : 4096;
            char *grown = realloc(buf, cap);
            FUZZ_REQUIRE(grown != NULL);
            buf = grown;
        }
        size_t got = fread(buf + *len, 1, cap - *len, f);
        *len += got;
        if (got == 0)
            break;
    }
    fclose(f);
    return buf;
}

/* Replays `data` as a journal. Returns gw_journal_open's code; fills *r and *repair. Aborts when
 * the replay's account of the file disagrees with the file. */
static inline int fuzz_journal_replay(const uint8_t *data, size_t size, struct fuzz_replay *r,
                                      struct gw_journal_repair *repair, struct gw_error *err)
{
    char path[512], broken[600];
    const char *dir = fuzz_scratch_dir();
    snprintf(path, sizeof(path), "%s/%s", dir, GW_JOURNAL_FILE);
    snprintf(broken, sizeof(broken), "%s%s", path, GW_JOURNAL_BROKEN_SUFFIX);
    remove(broken);
    FILE *f = fopen(path, "wb");
    FUZZ_REQUIRE(f != NULL && fwrite(data, 1, size, f) == size && fclose(f) == 0);
    memset(r, 0, sizeof(*r));
    r->data = data;
    r->size = size;
    struct gw_journal j;
    memset(err, 0, sizeof(*err));
    int rc = gw_journal_open(&j, dir, fuzz_replay_visit, r, repair, err);
    size_t now_len, broken_len;
    char *now = fuzz_slurp(path, &now_len);
    char *cut = fuzz_slurp(broken, &broken_len);
    if (rc == 0) {
        FUZZ_REQUIRE(j.last_seq == r->last_seq);
        if (repair->torn) {
            /* The torn tail went to .broken byte for byte; whole lines stay. */
            FUZZ_REQUIRE(repair->offset == j.size && repair->offset + repair->bytes == size);
            FUZZ_REQUIRE(broken_len == repair->bytes &&
                         memcmp(cut, data + repair->offset, broken_len) == 0);
            /* Only a line without its newline counts as torn (docs/operations.md, What replay
             * forgives): a complete line, JSON or not, is never cut away. */
            FUZZ_REQUIRE(memchr(data + repair->offset, '\n', repair->bytes) == NULL);
        } else {
            FUZZ_REQUIRE(j.size == size && cut == NULL);
        }
        FUZZ_REQUIRE(j.size == 0 || data[j.size - 1] == '\n');
        FUZZ_REQUIRE(now_len == j.size && (now_len == 0 || memcmp(now, data, now_len) == 0));
        FUZZ_REQUIRE(r->records == 0 || r->last_offset + r->last_len < j.size);
        gw_journal_close(&j);
    } else {
        /* A refusal leaves the file as it was, and names the file and line. */
        FUZZ_REQUIRE(now_len == size && (size == 0 || memcmp(now, data, size) == 0));
        FUZZ_REQUIRE(rc != -EINVAL || strncmp(err->msg, "journal: ", 9) == 0);
    }
    free(now);
    free(cut);
    return rc;
}

#endif
