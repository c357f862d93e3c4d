/* Journal segments (docs/journal.md §6): names, the header and seal lines, and the start checks
 * over the sealed segments of a state dir. */
#ifndef SHARDGATE_GW_SEGMENT_H
#define SHARDGATE_GW_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "error.h"

#define GW_SEGMENT_NAME_MAX 40 /* "journal-" 20 digits ".jsonl" and a NUL */
#define GW_SHA256_HEX 64
#define GW_SEGMENT_BYTES_DEFAULT 67108864ull
#define GW_SEGMENT_BYTES_MIN 65536ull
#define GW_SEGMENT_BYTES_MAX (1ull << 40)

/* A sealed segment as the start checks read it: its first and its last line only. */
struct gw_segment {
    uint64_t first_seq, last_seq; /* last_seq = first_seq - 1 when it holds no receipt */
    uint64_t size;                /* file size */
    uint64_t bytes;               /* bytes before the seal line */
    char sha256[GW_SHA256_HEX + 1];
    char prev[GW_SHA256_HEX + 1]; /* its header's prev ("" for the first segment) */
    int checked;                  /* 1: its lines carry checksums (docs/journal.md §2.1) */
};

struct gw_segments {
    struct gw_segment *sealed; /* ascending first_seq, a continuous run */
    size_t count, cap;
    /* Sealed segments moved away by `shardgate journal archive` (docs/journal.md §8): listed in
     * archive.jsonl, absent from the state dir; a run from seq 1 just before `sealed`. Their
     * sha256 is archive.jsonl's (of the whole file), `prev` is empty. */
    struct gw_segment *archived;
    size_t narchived;
};

/* `journal-<first_seq, 20 digits>.jsonl` into out. */
void gw_segment_name(char out[GW_SEGMENT_NAME_MAX], uint64_t first_seq);
/* Parses a sealed segment's name. Returns 0 or -EINVAL (not one). */
int gw_segment_parse_name(const char *name, uint64_t *first_seq);

/* The SHA-256 of len bytes in lowercase hex (a seal's, an archive entry's). */
void gw_sha256_hex(const void *data, size_t len, char out[GW_SHA256_HEX + 1]);

/* The header line `{"type":"segment","first_seq":F,"prev":"<hex>"}`, its crc32 member
 * (docs/journal.md §2.1) and a newline. */
void gw_segment_header_line(struct gw_buf *out, uint64_t first_seq, const char *prev);
/* The seal line `{"type":"seal","last_seq":L,"bytes":B,"sha256":"<hex>"}`, its crc32 member
 * when the segment's lines carry one (`checked`), and a newline. */
/* 1 when `offset` is where the seal of sealed segment `s` starts: a checkpoint there ends at
 * the segment's end, with no epoch record after it (docs/journal.md §8). Known from the seal of
 * a segment in the state dir, rebuilt from the file size of an archived one. */
int gw_segment_seal_at(const struct gw_segment *s, uint64_t offset);

void gw_segment_seal_line(struct gw_buf *out, uint64_t last_seq, uint64_t bytes, const char *sha256,
                          int checked);
/* Parses a header line (without its newline), byte-exact, with a crc32 member that matches or
 * none (a line written before checksums). Returns 0 or -EINVAL. */
int gw_segment_parse_header(const char *line, size_t len, uint64_t *first_seq, char *prev);
/* Parses a seal line (without its newline) as gw_segment_parse_header. */
int gw_segment_parse_seal(const char *line, size_t len, uint64_t *last_seq, uint64_t *bytes,
                          char *sha256);

/* 1 when the lines of the segment file `fd` (first_seq, size bytes) carry checksums, as its first
 * line decides (docs/journal.md §2.1): a header with its crc32 member, or for the first segment
 * an epoch record ending as a checked line does; also 1 when it has no complete line yet (what
 * is written next carries them). 0: written before checksums. */
int gw_segment_file_checked(int fd, uint64_t first_seq, uint64_t size);

/* Lists and checks the sealed segments of `dir` (docs/journal.md §6, start checks): names,
 * first and last lines, the run of seqs, the prev links, the seal's byte count against the file
 * size. Returns 0, -EINVAL with err->msg `journal: <file>: <what>`, -ENOMEM, -errno. */
int gw_segments_scan(const char *dir, struct gw_segments *out, struct gw_error *err);
void gw_segments_free(struct gw_segments *s);
/* first_seq of the segment after the last sealed one (present or archived): 1 when none. */
uint64_t gw_segments_next_first(const struct gw_segments *s);
/* The archived segment with this first_seq, or NULL. */
const struct gw_segment *gw_segments_archived(const struct gw_segments *s, uint64_t first_seq);

#define GW_ARCHIVE_LIST_FILE "archive.jsonl"
/* Reads <dir>/archive.jsonl (docs/journal.md §8): one entry a line, byte-exact
 * `{"name","first_seq","last_seq","bytes","sha256","archived_as"}`; *out (free() it) in file
 * order, as_names[i] (free() the array and each) the archived_as. A missing file is 0 entries.
 * Returns 0, -EINVAL with err `journal: <file>:<line>: <what>`, -ENOMEM, -errno. */
int gw_archive_list_read(const char *dir, struct gw_segment **out, size_t *n, char ***as_names,
                         struct gw_error *err);

#endif
