/* The journal (<state-dir>/journal.jsonl, docs/journal.md, docs/decisions.md): replay with
 * torn-tail repair, epoch records, and durable appends that leave no partial line behind. */
#ifndef SHARDGATE_GW_JOURNAL_H
#define SHARDGATE_GW_JOURNAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "buf.h"
#include "chain.h"
#include "error.h"
#include "topology.h"

#define GW_JOURNAL_FILE "journal.jsonl"
#define GW_JOURNAL_BROKEN_SUFFIX ".broken"

struct gw_journal {
    int fd;
    char *path;                  /* <state-dir>/journal.jsonl */
    uint64_t size;               /* bytes of whole, durable lines; anything past it is cut away */
    uint64_t last_seq;           /* seq of the last receipt record, 0 when there is none */
    struct gw_epoch_chain chain; /* every epoch record, replayed and appended */
};

/* A record met during replay, borrowed for the visit only: a receipt record (`receipt` set), or
 * an epoch record (`members` set: its whole membership; `receipt` NULL). */
struct gw_journal_record {
    size_t line;
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

/* Creates `dir` if needed (synced into its parent) and checks it (docs/operations.md, State
 * dir): done first so that nothing is created in a refused state dir. Returns 0; -EINVAL
 * (refused, err filled); -errno. */
int gw_journal_make_state_dir(const char *dir, struct gw_error *err);

/* Creates `dir` if needed, opens and locks its journal, replays every record through `visit`
 * and repairs a torn last line: only an unterminated one (copied to journal.jsonl.broken, then
 * truncated away). Returns 0; -EINVAL when the journal is unusable: a complete line is bad
 * (err->msg "journal: <file>:<line>: <what>", the file untouched), or the state dir or a file
 * in it fails docs/operations.md (State dir requirements); -EBUSY when another process holds
 * the journal; -errno. */
int gw_journal_open(struct gw_journal *j, const char *dir, gw_journal_visit_fn visit, void *ctx,
                    struct gw_journal_repair *repair, struct gw_error *err);

void gw_journal_close(struct gw_journal *j);

/* Appends and syncs the epoch record of `t` (source start) unless `t` is the journal's latest
 * epoch, and adds it to the chain. For the start only, before the journal writer runs. Returns 0
 * and *written (0 or 1), or a negative code as gw_journal_append. */
int gw_journal_write_epoch(struct gw_journal *j, const struct gw_topology *t, int *written,
                           struct gw_error *err);

/* The chain's next entry for `t`: epoch_seq and prev from the chain, the time now, first_seq the
 * seq the next receipt record will have after `receipts_ahead` more. Call from the one writer. */
void gw_journal_epoch_entry(struct gw_journal *j, const struct gw_topology *t,
                            enum gw_epoch_source source, uint64_t receipts_ahead,
                            struct gw_epoch_entry *out);

/* Appends the epoch record line (docs/journal.md §2) of a contract, a membership and the chain
 * entry `e`, without a newline. */
void gw_journal_epoch_line(struct gw_buf *out, const struct gw_contract *c,
                           const struct gw_membership *m, const struct gw_epoch_entry *e);

/* Appends the bytes a receipt record starts with, up to and including `"receipt":`. The record
 * is this prefix, the receipt bytes and "}\n". */
void gw_journal_receipt_prefix(struct gw_buf *out, uint64_t seq,
                               const unsigned char fingerprint[GW_FINGERPRINT_LEN]);

/* Writes whole lines and fdatasyncs them; *sync_ns (may be NULL) gets the fdatasync time. On
 * failure the file is truncated back to its last good length and -errno is returned with
 * err->msg naming the file. Not thread-safe: one writer at a time. */
int gw_journal_append(struct gw_journal *j, const char *data, size_t len, uint64_t *sync_ns,
                      struct gw_error *err);

/* Reads `len` bytes at `offset` (a stored receipt). Thread-safe. Returns 0 or -errno. */
/* Appends `len` bytes read at `offset` to `out`. Returns 0, -ENOMEM or a read error. */
int gw_journal_copy(const struct gw_journal *j, uint64_t offset, size_t len, struct gw_buf *out);

int gw_journal_read(const struct gw_journal *j, uint64_t offset, size_t len, char *out);

#endif
