/* The journal (<state-dir>/journal.jsonl, docs/journal.md, docs/decisions.md): replay with
 * torn-tail repair, epoch records, and durable appends that leave no partial line behind. */
#ifndef SHARDGATE_GW_JOURNAL_H
#define SHARDGATE_GW_JOURNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "batch.h"
#include "buf.h"
#include "chain.h"
#include "error.h"
#include "records.h"
#include "segment.h"
#include "topology.h"

#define GW_JOURNAL_FILE "journal.jsonl"
#define GW_JOURNAL_NEW_FILE "journal.jsonl.new"
#define GW_JOURNAL_BROKEN_SUFFIX ".broken"

struct gw_journal {
    int fd;                      /* the active segment */
    int dir_fd;                  /* the state dir, flock'ed: one process per state dir */
    char *dir;                   /* <state-dir> */
    char *path;                  /* <state-dir>/journal.jsonl */
    uint64_t size;               /* bytes of whole, durable lines; anything past it is cut away */
    uint64_t last_seq;           /* seq of the last receipt record, 0 when there is none */
    struct gw_epoch_chain chain; /* every epoch record, replayed and appended */
    /* Segments (docs/journal.md §6). */
    _Atomic uint64_t segment; /* first_seq of the active segment */
    uint64_t segment_bytes;   /* rotate before a group would make it larger */
    struct gw_segments segs;  /* the sealed ones, ascending */
    pthread_rwlock_t swap;    /* readers of the active fd against a rotation */
    void *hash;               /* SHA-256 (EVP_MD_CTX) of the active segment's bytes so far */
    struct gw_buf epoch_line; /* the latest epoch record line, newline included */
    int create_active;        /* 1: no journal.jsonl at start; written after the replay */
    int active_checked; /* 1: the active segment's lines carry checksums (docs/journal.md §2.1) */
    /* The first_seq from which every segment's lines carry checksums (docs/journal.md §2.1):
     * those before it were written before checksums; UINT64_MAX while the active one has none
     * (until gw_journal_seal_unchecked). */
    uint64_t checked_from;
    unsigned flags; /* GW_JOURNAL_* */
};

/* `shardgate journal verify`: change nothing (no crash state finished, no torn tail cut: both
 * are reported), and hash every sealed segment against its seal. */
#define GW_JOURNAL_VERIFY 1u

/* Where a replay starts: just after a checkpoint's last record (docs/journal.md §7). The chain
 * and last_seq of the journal are the checkpoint's already. */
struct gw_journal_resume {
    uint64_t segment, offset;
    uint64_t last_seq; /* the seq the position follows (an archived segment must end there) */
};

/* A record met during replay, borrowed for the visit only: a receipt record (`receipt` set), or
 * an epoch record (`members` set: its whole membership; `receipt` NULL). */
struct gw_journal_record {
    size_t line;
    uint64_t segment;   /* first_seq of the segment it is in */
    uint64_t epoch_seq; /* receipts: the epoch it names */
    const struct gw_membership *members;
    uint64_t seq;
    unsigned char fingerprint[GW_FINGERPRINT_LEN];
    json_t *receipt;
    uint64_t receipt_offset; /* where the exact receipt bytes are in the file */
    size_t receipt_len;
};

/* Called for every record in file order. Returns 0, or a negative code with
 * err->msg saying what is wrong with the record (the journal adds file and line). */
typedef int (*gw_journal_visit_fn)(void *ctx, const struct gw_journal_record *rec,
                                   struct gw_error *err);

/* What the replay cut away, if anything. */
struct gw_journal_repair {
    int torn;        /* 1 when an unterminated last line was moved to journal.jsonl.broken */
    size_t line;     /* its line number */
    uint64_t offset; /* where it started: the journal's new length */
    uint64_t bytes;  /* how many bytes it had */
};

/* Creates `dir` if needed, opens and locks its journal, replays every record through `visit`
 * and repairs a torn last line: only an unterminated one (copied to journal.jsonl.broken, then
 * truncated away). Returns 0; -EINVAL when the journal is unusable: a complete line is bad
 * (err->msg "journal: <file>:<line>: <what>", the file untouched), or the state dir or a file
 * in it fails docs/operations.md (State dir requirements); -EBUSY when another process holds
 * the journal; -errno. On an error nothing stays open or allocated. */
int gw_journal_open(struct gw_journal *j, const char *dir, gw_journal_visit_fn visit, void *ctx,
                    struct gw_journal_repair *repair, struct gw_error *err);

/* The first half of gw_journal_open: creates, checks and locks the state dir, finishes a
 * rotation a crash interrupted, runs the start checks over the segments (docs/journal.md §6) and
 * opens the active one. Errors as gw_journal_open. */
int gw_journal_prepare(struct gw_journal *j, const char *dir, uint64_t segment_bytes,
                       unsigned flags, struct gw_error *err);

/* The second half: replays from `from` (NULL: the first segment) strictly to the end, repairs a
 * torn tail of the active segment, and creates the active segment if it was missing. */
int gw_journal_replay(struct gw_journal *j, const struct gw_journal_resume *from,
                      gw_journal_visit_fn visit, void *ctx, struct gw_journal_repair *repair,
                      struct gw_error *err);

/* After the replay, before anything is written: when the active segment's lines carry no
 * checksums (a journal written before them), seals it under its sha256 and starts the next
 * one, so that every line written from now on carries one (docs/journal.md §2.1). Returns 0 or
 * an error of gw_journal_rotate. */
int gw_journal_seal_unchecked(struct gw_journal *j, struct gw_error *err);

/* Path of the segment with this first_seq (sealed or active; free() it). NULL: no memory. */
char *gw_journal_segment_path(const struct gw_journal *j, uint64_t first_seq);

/* 1 when the segment with this first_seq is present (sealed or active). */
int gw_journal_has_segment(const struct gw_journal *j, uint64_t first_seq);

/* Writes the next active segment (header and epoch repeat) through journal.jsonl.new and a
 * rename, and makes it the journal's fd. From the one writer, or at start. */
int gw_journal_create_active(struct gw_journal *j, struct gw_error *err);

/* Seals the active segment and opens the next one (docs/journal.md §6, rotation). From the one
 * writer only. Returns 0 or -errno with err->msg. */
int gw_journal_rotate(struct gw_journal *j, struct gw_error *err);

void gw_journal_close(struct gw_journal *j);

/* Appends and syncs the epoch record of `t` (source start) unless `t` is the journal's latest
 * epoch, and adds it to the chain. For the start only, before the journal writer runs. Returns 0
 * and *written (0 or 1), or a negative code as gw_journal_append. */
int gw_journal_write_epoch(struct gw_journal *j, const struct gw_topology *t, int *written,
                           struct gw_error *err);

/* Makes `line` (a whole epoch record line, newline included) the epoch record in force: the one
 * a rotation repeats at the top of the next segment (docs/journal.md §6), kept as its record
 * (without a crc32 member, which is checked). Returns 0, -EBADMSG (not a whole line, or its
 * checksum does not match) or -ENOMEM (then a rotation fails rather than repeat another record). */
int gw_journal_set_epoch_line(struct gw_journal *j, const char *line, size_t len);

/* The chain's next entry for `t`: epoch_seq and prev from the chain, the time now, first_seq the
 * seq the next receipt record will have after `receipts_ahead` more. Call from the one writer. */
void gw_journal_epoch_entry(struct gw_journal *j, const struct gw_topology *t,
                            enum gw_epoch_source source, uint64_t receipts_ahead,
                            struct gw_epoch_entry *out);

/* Writes whole lines and fdatasyncs them; *sync_ns (may be NULL) gets the fdatasync time. On
 * failure the file is truncated back to its last good length and -errno is returned with
 * err->msg naming the file. Not thread-safe: one writer at a time. */
int gw_journal_append(struct gw_journal *j, const char *data, size_t len, uint64_t *sync_ns,
                      struct gw_error *err);

/* The same for the bytes of `n` iovecs, written in order by one writev where the kernel takes
 * them whole. */
int gw_journal_appendv(struct gw_journal *j, const struct iovec *iov, int n, uint64_t *sync_ns,
                       struct gw_error *err);

/* The receipt record a read expects at a place the index gave (docs/journal.md §9): its seq, its
 * batch id and its fingerprint, whole (a replayed POST's) or the index's first 8 bytes. */
struct gw_receipt_name {
    uint64_t seq;
    const char *id;
    size_t id_len;
    const unsigned char *fingerprint; /* GW_FINGERPRINT_LEN bytes, or NULL: fp_prefix */
    uint64_t fp_prefix;               /* big-endian first 8 bytes */
};

/* Appends the stored receipt of record `name` (its `len` bytes at `offset` of segment `segment`)
 * to `out`, once its whole line has been read and checked: its checksum when its segment's lines
 * carry one (docs/journal.md §2.1), that it is that seq's record line, and that the record names
 * that batch id and fingerprint. Thread-safe. Returns 0, -EBADMSG (the checksum does not match),
 * -ENOMSG (no checksum where one is due), -EILSEQ (the line is not that seq's record), -EXDEV
 * (a sound record of another batch or fingerprint: the index is wrong), -ENOMEM or a read error.
 * Nothing is appended on an error. */
int gw_journal_read_receipt(struct gw_journal *j, uint64_t segment,
                            const struct gw_receipt_name *name, uint64_t offset, size_t len,
                            struct gw_buf *out);

/* Where the line of receipt record `seq` starts, from where its receipt bytes start. */
uint64_t gw_journal_receipt_line(uint64_t seq, uint64_t receipt_offset);

#endif
