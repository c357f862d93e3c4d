/* The journal: one JSON record per line, replayed strictly; only an unterminated last line (a torn
 * append) is forgiven. */
#include "journal.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <sys/file.h>

#include "fileio.h"
#include "receipt.h"
#include "line_check.h"
#include "ring.h"
#include "state_format.h"
#include "io.h"

/* Replay state: what the lines so far established. */
struct replay {
    struct gw_journal *j;
    gw_journal_visit_fn visit;
    void *ctx;
    struct gw_buf prefix;
    uint64_t segment;     /* first_seq of the segment being replayed */
    int checked;          /* its lines carry checksums (docs/journal.md §2.1) */
    struct gw_buf record; /* a checked line's record and a newline */
};

static char *join_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static int sync_dir(const char *dir)
{
    int fd = gw_io.open(dir, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int rc = gw_io.fsync(fd) == 0 ? 0 : -errno;
    close(fd);
    return rc;
}

static int is_hex(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

static void unhex(const char *s, unsigned char *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi = s[2 * i] <= '9' ? s[2 * i] - '0' : s[2 * i] - 'a' + 10;
        int lo = s[2 * i + 1] <= '9' ? s[2 * i + 1] - '0' : s[2 * i + 1] - 'a' + 10;
        out[i] = (unsigned char)(hi << 4 | lo);
    }
}

static int bad(struct gw_error *err, const char *what)
{
    gw_error_set(err, "", "%s", what);
    return -EINVAL;
}

/* Out of memory is -ENOMEM, never a fault of the file: exit 1 (docs/decisions.md §28). */
static int no_memory(struct gw_error *err)
{
    gw_error_set(err, "", "journal: out of memory");
    return -ENOMEM;
}

static int replay_epoch(struct replay *r, json_t *root, const char *line, size_t len, size_t lineno,
                        struct gw_error *err)
{
    struct gw_epoch_entry e;
    struct gw_membership m;
    int rc =
        gw_epoch_record_replay(root, line, len, &r->j->chain, r->j->last_seq, &e, &m, NULL, err);
    if (rc != 0)
        return rc;
    struct gw_journal_record rec = {.line = lineno, .segment = r->segment, .members = &m};
    rc = gw_journal_set_epoch_line(r->j, line, len + 1) || gw_chain_append(&r->j->chain, &e)
             ? no_memory(err)
             : r->visit(r->ctx, &rec, err);
    gw_membership_free(&m);
    return rc;
}

/* Checks the record's bytes: the canonical prefix, the receipt, then "}". */
static int check_receipt_bytes(struct replay *r, struct gw_journal_record *rec, const char *line,
                               size_t len, struct gw_error *err)
{
    gw_buf_reset(&r->prefix);
    gw_records_receipt_prefix(&r->prefix, rec->seq, rec->fingerprint);
    if (r->prefix.failed)
        return no_memory(err);
    size_t n = r->prefix.len;
    if (len < n + 3 || memcmp(line, r->prefix.data, n) != 0 || line[n] != '{' ||
        line[len - 2] != '}' || line[len - 1] != '}')
        return bad(err, "receipt record: not in the canonical form "
                        "{\"type\":\"receipt\",\"seq\":N,\"fingerprint\":...,\"receipt\":{...}}");
    rec->receipt_len = len - n - 1;
    rec->receipt_offset += n;
    return 0;
}

static int replay_receipt(struct replay *r, json_t *root, const char *line, size_t len,
                          struct gw_journal_record *rec, struct gw_error *err)
{
    json_t *seq = json_object_get(root, "seq");
    json_t *fp = json_object_get(root, "fingerprint");
    rec->receipt = json_object_get(root, "receipt");
    /* Exactly the four keys: a key after "receipt" would otherwise be taken into its bytes. */
    if (json_object_size(root) != 4)
        return bad(err, "receipt record: must hold exactly type, seq, fingerprint and receipt");
    if (!json_is_integer(seq) || (uint64_t)json_integer_value(seq) != r->j->last_seq + 1) {
        char what[96];
        snprintf(what, sizeof(what), "receipt record: seq must be %llu",
                 (unsigned long long)r->j->last_seq + 1);
        return bad(err, what);
    }
    if (!json_is_string(fp) || json_string_length(fp) != 2 * GW_FINGERPRINT_LEN ||
        !is_hex(json_string_value(fp), 2 * GW_FINGERPRINT_LEN))
        return bad(err, "receipt record: fingerprint must be 64 lowercase hex digits");
    if (!json_is_object(rec->receipt))
        return bad(err, "receipt record: receipt must be an object");
    int rc = gw_epoch_receipt_link(&r->j->chain, rec->receipt, &rec->epoch_seq, err);
    if (rc != 0)
        return rc;
    rec->seq = r->j->last_seq + 1;
    unhex(json_string_value(fp), rec->fingerprint, GW_FINGERPRINT_LEN);
    rc = check_receipt_bytes(r, rec, line, len, err);
    if (rc == 0)
        rc = r->visit(r->ctx, rec, err);
    assert(rec->seq == r->j->last_seq + 1); /* seq +1 per receipt (docs/decisions.md §9) */
    if (rc == 0)
        r->j->last_seq = rec->seq;
    return rc;
}

/* Replays one complete line (without its newline). Returns 0, or -EINVAL with the fault in err. */
static int replay_line(struct replay *r, const char *line, size_t len, uint64_t offset,
                       size_t lineno, struct gw_error *err)
{
    json_error_t jerr;
    /* ALLOW_NUL: change ids and keys may hold \u0000 (docs/decisions.md), so receipts may too. */
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!root) {
        gw_error_set(err, "", "not JSON (column %d: %s)", jerr.column, jerr.text);
        return -EINVAL;
    }
    const char *type = json_string_value(json_object_get(root, "type"));
    struct gw_journal_record rec = {
        .line = lineno, .segment = r->segment, .receipt_offset = offset};
    int rc;
    if (type && strcmp(type, "epoch") == 0)
        rc = replay_epoch(r, root, line, len, lineno, err);
    else if (type && strcmp(type, "receipt") == 0)
        rc = replay_receipt(r, root, line, len, &rec, err);
    else
        rc = bad(err, "record type must be \"epoch\" or \"receipt\"");
    json_decref(root);
    return rc;
}

/* Checks a complete line's checksum as its segment's form asks, then replays its record. */
static int replay_checked(struct replay *r, const char *line, size_t len, uint64_t offset,
                          size_t lineno, struct gw_error *err)
{
    if (!r->checked)
        return replay_line(r, line, len, offset, lineno, err);
    size_t body;
    int rc = gw_record_check(line, len, &body);
    if (rc != 0)
        return bad(err, gw_record_fault(rc));
    gw_buf_reset(&r->record);
    gw_buf_append(&r->record, line, body);
    gw_buf_puts(&r->record, "}\n");
    if (r->record.failed)
        return no_memory(err);
    return replay_line(r, r->record.data, body + 1, offset, lineno, err);
}

/* Why an open state-dir file is unusable (not a regular file, someone else's), or NULL. */
static const char *unusable_file(int fd, char *why, size_t n)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        snprintf(why, n, "%s", strerror(errno));
    else if (!S_ISREG(st.st_mode))
        snprintf(why, n, "not a regular file");
    else if (st.st_uid != geteuid())
        snprintf(why, n, "owned by uid %u, not by the effective uid %u", (unsigned)st.st_uid,
                 (unsigned)geteuid());
    else
        return NULL;
    return why;
}

/* Opens a file of the state dir without following a symlink and requires a regular file owned
 * by the effective user. Returns the fd, or -EINVAL (unusable: exit 3) / -errno, err set. */
static int open_state_file(const char *path, int flags, struct gw_error *err)
{
    /* O_NONBLOCK: a FIFO in the journal's place must not block the open; regular files
     * ignore it. */
    int fd = gw_io.open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0640);
    if (fd < 0) {
        int e = errno;
        /* EISDIR: a directory; ENXIO: a FIFO without a reader opened for writing. */
        int unusable = e == ELOOP || e == EISDIR || e == ENXIO;
        gw_error_set(err, "", "journal: %s: %s", path,
                     e == ELOOP ? "is a symbolic link (not followed)"
                     : unusable ? "not a regular file"
                                : strerror(e));
        return unusable ? -EINVAL : -e;
    }
    char why[96];
    if (unusable_file(fd, why, sizeof(why))) {
        gw_error_set(err, "", "journal: %s: %s", path, why);
        close(fd);
        return -EINVAL;
    }
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
        int e = errno;
        gw_error_set(err, "", "journal: %s: %s", path, strerror(e));
        close(fd);
        return -e;
    }
    return fd;
}

/* Moves the torn tail [at, end) to journal.jsonl.broken and truncates it away. */
static int cut_tail(struct gw_journal *j, const char *data, uint64_t at, uint64_t end,
                    struct gw_error *err)
{
    size_t n = strlen(j->path) + sizeof(GW_JOURNAL_BROKEN_SUFFIX);
    char *broken = malloc(n);
    int rc = broken ? 0 : -ENOMEM;
    if (broken)
        snprintf(broken, n, "%s%s", j->path, GW_JOURNAL_BROKEN_SUFFIX);
    int fd = rc == 0 ? open_state_file(broken, O_WRONLY | O_CREAT | O_APPEND, err) : -1;
    if (rc == 0 && fd < 0)
        rc = fd;
    if (rc == 0)
        rc = gw_file_write_all(fd, data + at, (size_t)(end - at));
    if (rc == 0 && gw_io.fsync(fd) != 0)
        rc = -errno;
    if (rc == 0 && (gw_io.ftruncate(j->fd, (off_t)at) != 0 || gw_io.fsync(j->fd) != 0))
        rc = -errno;
    if (rc == -EINVAL) { /* err names the unusable .broken file */
        char why[sizeof(err->msg)];
        snprintf(why, sizeof(why), "%s", err->msg);
        gw_error_set(err, "", "journal: %s: cannot move the torn last line: %.600s", j->path, why);
    } else if (rc != 0)
        gw_error_set(err, "", "journal: %s: cannot move the torn last line to %s: %s", j->path,
                     broken ? broken : "?", strerror(-rc));
    if (fd >= 0)
        close(fd);
    free(broken);
    return rc;
}

/* Replays the lines in [pos, size) of a segment (line numbers from `lineno`); a torn last line
 * is repaired only when `repair` is set (the active segment). */
static int replay_lines(struct replay *r, const char *path, const char *data, uint64_t pos,
                        uint64_t size, size_t lineno, struct gw_journal_repair *repair,
                        struct gw_error *err)
{
    for (; pos < size; lineno++) {
        const char *nl = memchr(data + pos, '\n', size - pos);
        /* Only an unterminated last line can be torn: appends write whole lines, so a complete
         * line that does not replay is damage, never forgiven (docs/operations.md, Journal). */
        if (!nl && repair) {
            *repair = (struct gw_journal_repair){1, lineno, pos, size - pos};
            return cut_tail(r->j, data, pos, size, err);
        }
        int rc = nl ? replay_checked(r, data + pos, (size_t)(nl - data - pos), pos, lineno, err)
                    : bad(err, "unterminated last line");
        if (rc != 0) {
            char what[sizeof(err->msg)];
            snprintf(what, sizeof(what), "%s", err->msg);
            gw_error_set(err, "", "journal: %s:%zu: %s", path, lineno, what);
            return rc;
        }
        pos = (uint64_t)(nl - data) + 1;
    }
    return 0;
}

static int map_fd(int fd, const char *path, uint64_t size, void **data, struct gw_error *err)
{
    *data = NULL;
    if (size == 0)
        return 0;
    *data = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (*data != MAP_FAILED)
        return 0;
    *data = NULL;
    gw_error_set(err, "", "journal: %s: cannot map: %s", path, strerror(errno));
    return -errno;
}

/* What the segment-start checks return when memory ran out: the caller answers it as such, not
 * as a fault of the journal. */
static const char OUT_OF_MEMORY[] = "2: out of memory";

/* The previous segment is archived (docs/journal.md §8) and the replay resumed after it from a
 * checkpoint, so no epoch record has been read: the repeat is taken as the latest epoch record
 * when it names the checkpoint chain's latest epoch — or, a record of the legacy form
 * (docs/journal.md §2, no epoch of its own: its id is recomputed), when it opens with that epoch's
 * ring id. Returns NULL or what is wrong. */
static const char *adopt_repeat(struct gw_journal *j, const char *data, uint64_t at, uint64_t size)
{
    struct gw_epoch_entry latest;
    const char *nl = at < size ? memchr(data + at, '\n', (size_t)(size - at)) : NULL;
    if (!nl || !gw_chain_latest(&j->chain, &latest))
        return "2: no epoch repeat after an archived segment";
    char want[GW_EPOCH_HEX_LEN + 16];
    snprintf(want, sizeof(want), "\"epoch\":\"%s\"", latest.epoch);
    size_t n = (size_t)(nl - (data + at)) + 1;
    size_t wl = strlen(want), k = 0;
    while (k + wl <= n && memcmp(data + at + k, want, wl) != 0)
        k++;
    char legacy[GW_EPOCH_HEX_LEN + 32];
    snprintf(legacy, sizeof(legacy), "{\"type\":\"epoch\",\"ring_id\":\"%s\",", latest.ring_id);
    size_t ll = strlen(legacy);
    if (k + wl > n && !(n > ll && memcmp(data + at, legacy, ll) == 0))
        return "2: the epoch repeat is not the checkpoint's latest epoch";
    int rc = gw_journal_set_epoch_line(j, data + at, n);
    return rc == -ENOMEM ? OUT_OF_MEMORY : rc ? "2: " GW_RECORD_MISMATCH : NULL;
}

/* The record of the line at data[at..size) that ends with a newline, a checked line's without
 * its crc32 member (docs/journal.md §2.1), into out with the newline. *end: just past the line.
 * Returns 0, -EINVAL (no newline), -EBADMSG or -ENOMSG (its checksum), -ENOMEM. */
static int line_record(const char *data, uint64_t at, uint64_t size, int checked,
                       struct gw_buf *out, uint64_t *end)
{
    const char *nl = at < size ? memchr(data + at, '\n', (size_t)(size - at)) : NULL;
    if (!nl)
        return -EINVAL;
    size_t len = (size_t)(nl - (data + at)), body = len;
    int rc = checked ? gw_record_check(data + at, len, &body) : 0;
    if (rc != 0)
        return rc;
    gw_buf_reset(out);
    gw_buf_append(out, data + at, body);
    gw_buf_puts(out, checked ? "}\n" : "\n");
    *end = (uint64_t)(nl - data) + 1;
    return out->failed ? -ENOMEM : 0;
}

/* "<number>: <what the checksum found>" into buf (docs/journal.md §2.1). */
static const char *line_fault(char *buf, size_t size, int number, int rc)
{
    snprintf(buf, size, "%d: %s", number, gw_record_fault(rc));
    return buf;
}

/* The header that opens every segment after the first (docs/journal.md §6), checked whether or
 * not the replay resumes inside the segment: its checksum, then that it names this segment and
 * links to `prev` (NULL: checked at start already). NULL or what is wrong; *at: just past it. */
static const char *check_header(const struct replay *r, const char *data, uint64_t size,
                                const char *prev, char *fault, size_t fault_size, uint64_t *at)
{
    const char *nl = size ? memchr(data, '\n', size) : NULL;
    uint64_t first = 0;
    char link[GW_SHA256_HEX + 1];
    size_t body = 0;
    int rc = nl && r->checked ? gw_record_check(data, (size_t)(nl - data), &body) : 0;
    *at = nl ? (uint64_t)(nl - data) + 1 : 0;
    if (rc != 0)
        return line_fault(fault, fault_size, 1, rc);
    if (!nl || gw_segment_parse_header(data, (size_t)(nl - data), &first, link) != 0)
        return "1: not a segment header line";
    if (first != r->segment)
        return "1: the header's first_seq is not this segment's";
    if (prev && strcmp(prev, link) != 0)
        return "1: the header's prev is not the sha256 of the previous segment's seal";
    return NULL;
}

/* The epoch repeat after the header at data[at..): byte for byte the chain's latest epoch
 * record (docs/journal.md §6), adopted when the previous segment is archived. *pos: where the
 * records start. */
static const char *check_repeat(struct replay *r, const char *data, uint64_t at, uint64_t size,
                                char *fault, size_t fault_size, uint64_t *pos)
{
    if (r->j->epoch_line.len == 0) {
        const char *what = adopt_repeat(r->j, data, at, size);
        if (what)
            return what;
    }
    const struct gw_buf *e = &r->j->epoch_line;
    int rc = line_record(data, at, size, r->checked, &r->record, pos);
    if (rc == -ENOMEM)
        return OUT_OF_MEMORY;
    if (rc == -EBADMSG || rc == -ENOMSG)
        return line_fault(fault, fault_size, 2, rc);
    if (rc != 0 || r->record.len != e->len || memcmp(r->record.data, e->data, e->len) != 0)
        return "2: not a repeat of the latest epoch record";
    return NULL;
}

static size_t count_lines(const char *data, uint64_t upto)
{
    size_t n = 1;
    for (const char *p = data; (p = memchr(p, '\n', (size_t)(data + upto - p))) != NULL; p++)
        n++;
    return n;
}

/* The latest epoch record at or before `offset` of a segment (a replay resumed from a
 * checkpoint): the last line there that is neither a receipt nor a header. Its checksum
 * failing refuses the start, naming the line as the replay would (docs/journal.md §2.1). */
static int load_epoch_line(struct gw_journal *j, const char *path, const char *data,
                           uint64_t offset, struct gw_error *err)
{
    uint64_t end = offset;
    while (end > 0) {
        uint64_t start = end - 1;
        while (start > 0 && data[start - 1] != '\n')
            start--;
        const char *l = data + start;
        size_t n = (size_t)(end - start);
        if (!(n > 17 && memcmp(l, "{\"type\":\"receipt\"", 17) == 0) &&
            !(n > 17 && memcmp(l, "{\"type\":\"segment\"", 17) == 0)) {
            int rc = gw_journal_set_epoch_line(j, l, n);
            if (rc == -ENOMEM)
                return no_memory(err);
            if (rc != 0)
                gw_error_set(err, "", "journal: %s:%zu: %s", path, count_lines(data, start),
                             GW_RECORD_MISMATCH);
            return rc ? -EINVAL : 0;
        }
        end = start;
    }
    return bad(err, "checkpoint: no epoch record before its offset");
}

/* Where the records of this segment start: `from` when resuming inside it, else past its
 * header and repeat. The header is checked either way. */
static int records_start(struct replay *r, const char *path, const char *data, uint64_t size,
                         const char *prev, uint64_t from, uint64_t *pos, struct gw_error *err)
{
    char fault[96];
    uint64_t at = 0;
    const char *what = NULL;
    *pos = from;
    if (r->segment != 1)
        what = check_header(r, data, size, prev, fault, sizeof(fault), &at);
    if (!what && r->segment != 1 && from == 0)
        what = check_repeat(r, data, at, size, fault, sizeof(fault), pos);
    if (what == OUT_OF_MEMORY)
        return no_memory(err);
    if (what) {
        gw_error_set(err, "", "journal: %s:%s", path, what);
        return -EINVAL;
    }
    return from > 0 ? load_epoch_line(r->j, path, data, from, err) : 0;
}

/* `journal verify`: the seal's sha256 against the bytes before it. */
static int check_seal_hash(const char *path, const char *data, const struct gw_segment *seg,
                           struct gw_error *err)
{
    char hex[GW_SHA256_HEX + 1];
    gw_sha256_hex(data, (size_t)seg->bytes, hex);
    if (strcmp(hex, seg->sha256) == 0)
        return 0;
    gw_error_set(err, "", "journal: %s: the seal's sha256 is not that of the bytes before it",
                 path);
    return -EINVAL;
}

static int replay_sealed(struct replay *r, const struct gw_segment *seg, uint64_t from,
                         struct gw_error *err)
{
    char *path = gw_journal_segment_path(r->j, seg->first_seq);
    int fd = path ? gw_io.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0) : -1;
    int rc = !path ? no_memory(err) : fd < 0 ? -errno : 0;
    if (path && fd < 0)
        gw_error_set(err, "", "journal: %s: %s", path, strerror(-rc));
    void *data = NULL;
    uint64_t pos = 0;
    r->segment = seg->first_seq;
    r->checked = seg->checked;
    if (rc == 0)
        rc = map_fd(fd, path, seg->size, &data, err);
    if (rc == 0)
        rc = records_start(r, path, data, seg->bytes, NULL, from, &pos, err);
    if (rc == 0)
        rc = replay_lines(r, path, data, pos, seg->bytes, count_lines(data, pos), NULL, err);
    if (rc == 0 && (r->j->flags & GW_JOURNAL_VERIFY))
        rc = check_seal_hash(path, data, seg, err);
    if (rc == 0 && r->j->last_seq != seg->last_seq) {
        gw_error_set(err, "",
                     "journal: %s: the seal's last_seq %llu is not its last receipt's %llu", path,
                     (unsigned long long)seg->last_seq, (unsigned long long)r->j->last_seq);
        rc = -EINVAL;
    }
    if (data)
        munmap(data, (size_t)seg->size);
    if (fd >= 0)
        close(fd);
    free(path);
    return rc;
}

static int replay_active(struct replay *r, uint64_t from, struct gw_journal_repair *repair,
                         struct gw_error *err)
{
    struct gw_journal *j = r->j;
    size_t n = j->segs.count;
    struct stat st;
    r->segment = j->segment;
    r->checked = j->active_checked;
    if (fstat(j->fd, &st) != 0) {
        gw_error_set(err, "", "journal: %s: cannot stat: %s", j->path, strerror(errno));
        return -errno;
    }
    void *data = NULL;
    uint64_t pos = 0;
    int rc = map_fd(j->fd, j->path, (uint64_t)st.st_size, &data, err);
    if (rc == 0 && st.st_size > 0)
        rc = records_start(r, j->path, data, (uint64_t)st.st_size,
                           n ? j->segs.sealed[n - 1].sha256 : NULL, from, &pos, err);
    if (rc == 0 && st.st_size > 0)
        rc = replay_lines(r, j->path, data, pos, (uint64_t)st.st_size, count_lines(data, pos),
                          (j->flags & GW_JOURNAL_VERIFY) ? NULL : repair, err);
    j->size = repair->torn ? repair->offset : (uint64_t)st.st_size;
    if (rc == 0 && j->size > 0)
        EVP_DigestUpdate(j->hash, data, (size_t)j->size);
    if (data)
        munmap(data, (size_t)st.st_size);
    return rc;
}

/* Archived segments are never read at start (docs/journal.md §8): the checkpoint the replay
 * resumes from must cover each, else exit 3 naming the first one not covered. */
static int check_archived_covered(const struct gw_journal *j, const struct gw_journal_resume *from,
                                  struct gw_error *err)
{
    for (size_t i = 0; i < j->segs.narchived; i++) {
        const struct gw_segment *a = &j->segs.archived[i];
        if (from && (a->first_seq < from->segment ||
                     (a->first_seq == from->segment && a->last_seq == from->last_seq)))
            continue;
        char name[GW_SEGMENT_NAME_MAX];
        gw_segment_name(name, a->first_seq);
        gw_error_set(err, "",
                     "journal: %s/%s: archived (archive.jsonl) and no usable checkpoint covers it",
                     j->dir, name);
        return -EINVAL;
    }
    return 0;
}

int gw_journal_replay(struct gw_journal *j, const struct gw_journal_resume *from,
                      gw_journal_visit_fn visit, void *ctx, struct gw_journal_repair *repair,
                      struct gw_error *err)
{
    struct replay r = {.j = j, .visit = visit, .ctx = ctx};
    struct gw_journal_resume start = from ? *from : (struct gw_journal_resume){1, 0, 0};
    memset(repair, 0, sizeof(*repair));
    int rc = check_archived_covered(j, from, err);
    for (size_t i = 0; rc == 0 && i < j->segs.count; i++) {
        const struct gw_segment *seg = &j->segs.sealed[i];
        if (seg->first_seq >= start.segment)
            rc = replay_sealed(&r, seg, seg->first_seq == start.segment ? start.offset : 0, err);
    }
    if (rc == 0 && j->create_active && !(j->flags & GW_JOURNAL_VERIFY))
        rc = gw_journal_create_active(j, err);
    else if (rc == 0 && j->fd >= 0)
        rc = replay_active(&r, j->segment == start.segment ? start.offset : 0, repair, err);
    gw_buf_free(&r.prefix);
    gw_buf_free(&r.record);
    return rc;
}

int gw_journal_seal_unchecked(struct gw_journal *j, struct gw_error *err)
{
    if (j->active_checked)
        return 0;
    int rc = j->size > 0 ? gw_journal_rotate(j, err) : 0;
    if (rc == 0) {
        j->active_checked = 1;
        j->checked_from = j->segment;
    }
    return rc;
}

/* Where the segments whose lines carry checksums begin: a run up to the active segment. */
static void find_checked_from(struct gw_journal *j)
{
    j->checked_from = j->active_checked ? j->segment : UINT64_MAX;
    for (size_t i = j->segs.count; j->active_checked && i > 0 && j->segs.sealed[i - 1].checked; i--)
        j->checked_from = j->segs.sealed[i - 1].first_seq;
}

/* Syncs the directory holding `dir`, so that a state dir just created survives a power loss
 * (its entry lives in the parent; syncing the journal and the state dir does not persist it). */
static void sync_parent(const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    while (n > 0 && dir[n - 1] != '/')
        n--;
    while (n > 1 && dir[n - 1] == '/')
        n--;
    char *parent = n == 0 ? strdup(".") : strndup(dir, n);
    if (parent)
        sync_dir(parent);
    free(parent);
}

/* Refuses a state dir others could write into or own (docs/operations.md, State dir). */
static int check_state_dir(const char *dir, struct gw_error *err)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        gw_error_set(err, "", "journal: state dir %s: %s", dir, strerror(errno));
        return -EINVAL;
    }
    if (!S_ISDIR(st.st_mode))
        gw_error_set(err, "", "journal: state dir %s: not a directory", dir);
    else if (st.st_uid != geteuid())
        gw_error_set(err, "", "journal: state dir %s: owned by uid %u, not by the effective uid %u",
                     dir, (unsigned)st.st_uid, (unsigned)geteuid());
    else if (st.st_mode & (S_IWGRP | S_IWOTH))
        gw_error_set(err, "", "journal: state dir %s: group- or world-writable (mode %04o)", dir,
                     (unsigned)(st.st_mode & 07777));
    else
        return 0;
    return -EINVAL;
}

/* Creates `dir` if needed (synced into its parent) and checks it (docs/operations.md, State
 * dir). Returns 0; -EINVAL (refused, err filled); -errno. */
static int make_state_dir(const char *dir, struct gw_error *err)
{
    int created = gw_io.mkdir(dir, 0750) == 0;
    if (!created && errno != EEXIST) {
        gw_error_set(err, "", "journal: cannot create state dir %s: %s", dir, strerror(errno));
        return -errno;
    }
    if (created)
        sync_parent(dir);
    return check_state_dir(dir, err);
}

/* Creates and checks the state dir and locks it: one process per state dir, whatever segment is
 * active (docs/journal.md §6). */
static int lock_dir(struct gw_journal *j, const char *dir, struct gw_error *err)
{
    int rc = make_state_dir(dir, err);
    if (rc != 0)
        return rc;
    j->dir = strdup(dir);
    j->path = join_path(dir, GW_JOURNAL_FILE);
    if (!j->dir || !j->path)
        return no_memory(err);
    j->dir_fd = gw_io.open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (j->dir_fd < 0) {
        gw_error_set(err, "", "journal: state dir %s: %s", dir, strerror(errno));
        return -errno;
    }
    if (flock(j->dir_fd, LOCK_EX | LOCK_NB) != 0) {
        gw_error_set(err, "", "journal: %s: in use by another process", dir);
        return -EBUSY;
    }
    return 0;
}

/* 1 when the file's last line is a seal line: a rotation stopped before its rename. */
static int ends_sealed(int fd)
{
    struct stat st;
    char buf[256];
    if (fstat(fd, &st) != 0 || st.st_size < 2)
        return 0;
    size_t n = st.st_size < (off_t)sizeof(buf) ? (size_t)st.st_size : sizeof(buf);
    if (pread(fd, buf, n, st.st_size - (off_t)n) != (ssize_t)n || buf[n - 1] != '\n')
        return 0;
    size_t at = n - 1;
    while (at > 0 && buf[at - 1] != '\n')
        at--;
    uint64_t last, bytes;
    char sha[GW_SHA256_HEX + 1];
    return gw_segment_parse_seal(buf + at, n - 1 - at, &last, &bytes, sha) == 0;
}

/* Crash states of a rotation (docs/journal.md §6): a leftover journal.jsonl.new goes; an active
 * segment ending with its seal takes its sealed name. */
static int finish_rotation(struct gw_journal *j, struct gw_error *err)
{
    char *tmp = join_path(j->dir, GW_JOURNAL_NEW_FILE);
    if (!tmp)
        return no_memory(err);
    int rc = gw_io.unlink(tmp) == 0 || errno == ENOENT ? 0 : -errno;
    free(tmp);
    /* O_NONBLOCK: a FIFO in the journal's place must not block (it is refused later). */
    int fd = rc == 0 ? gw_io.open(j->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0) : -1;
    if (fd >= 0 && ends_sealed(fd)) {
        struct gw_segments segs;
        rc = gw_segments_scan(j->dir, &segs, err);
        uint64_t first = gw_segments_next_first(&segs);
        char name[GW_SEGMENT_NAME_MAX];
        gw_segment_name(name, first);
        char *to = rc == 0 ? join_path(j->dir, name) : NULL;
        if (rc == 0 && (!to || gw_io.rename(j->path, to) != 0 || gw_io.fsync(j->dir_fd) != 0))
            rc = to ? -errno : -ENOMEM;
        free(to);
        gw_segments_free(&segs);
    }
    if (fd >= 0)
        close(fd);
    if (rc != 0 && rc != -EINVAL)
        gw_error_set(err, "", "journal: %s: cannot finish a rotation: %s", j->path, strerror(-rc));
    return rc;
}

/* Opens the active segment, or notes that it must be created after the replay. */
static int open_active(struct gw_journal *j, struct gw_error *err)
{
    size_t n = j->segs.count;
    j->segment = gw_segments_next_first(&j->segs);
    int exists = access(j->path, F_OK) == 0;
    j->active_checked = 1;
    if (!exists && (n > 0 || j->segs.narchived > 0)) {
        j->create_active = 1;
        return 0;
    }
    if (!exists && (j->flags & GW_JOURNAL_VERIFY))
        return 0; /* an empty journal: nothing to verify, nothing created */
    j->fd = open_state_file(j->path, O_RDWR | O_CREAT | O_APPEND, err);
    if (j->fd < 0) {
        int rc = j->fd;
        j->fd = -1;
        return rc;
    }
    if (!exists)
        gw_io.fsync(j->dir_fd);
    struct stat st;
    j->active_checked =
        fstat(j->fd, &st) != 0 || gw_segment_file_checked(j->fd, j->segment, (uint64_t)st.st_size);
    if (n > 0 && j->segs.sealed[n - 1].checked && !j->active_checked) {
        gw_error_set(err, "",
                     "journal: %s: its lines carry no checksums, after a segment whose "
                     "lines do",
                     j->path);
        return -EINVAL;
    }
    return 0;
}

int gw_journal_prepare(struct gw_journal *j, const char *dir, uint64_t segment_bytes,
                       unsigned flags, struct gw_error *err)
{
    memset(j, 0, sizeof(*j));
    j->flags = flags;
    j->fd = -1;
    j->dir_fd = -1;
    j->segment_bytes = segment_bytes;
    gw_chain_init(&j->chain);
    gw_buf_init(&j->epoch_line);
    pthread_rwlock_init(&j->swap, NULL);
    j->hash = EVP_MD_CTX_new();
    int rc = j->hash && EVP_DigestInit_ex(j->hash, EVP_sha256(), NULL) ? 0 : no_memory(err);
    if (rc == 0)
        rc = lock_dir(j, dir, err);
    if (rc == 0) /* before any other file of the dir is read or written */
        rc = gw_state_format_check(j->dir_fd, j->dir, !(flags & GW_JOURNAL_VERIFY), err);
    if (rc == 0 && !(flags & GW_JOURNAL_VERIFY))
        rc = finish_rotation(j, err);
    if (rc == 0)
        rc = gw_segments_scan(j->dir, &j->segs, err);
    if (rc == 0)
        rc = open_active(j, err);
    if (rc == 0)
        find_checked_from(j);
    if (rc != 0)
        gw_journal_close(j);
    return rc;
}

int gw_journal_open(struct gw_journal *j, const char *dir, gw_journal_visit_fn visit, void *ctx,
                    struct gw_journal_repair *repair, struct gw_error *err)
{
    int rc = gw_journal_prepare(j, dir, GW_SEGMENT_BYTES_DEFAULT, 0, err);
    if (rc != 0)
        return rc;
    rc = gw_journal_replay(j, NULL, visit, ctx, repair, err);
    if (rc != 0)
        gw_journal_close(j);
    return rc;
}

void gw_journal_close(struct gw_journal *j)
{
    if (j->fd >= 0)
        close(j->fd);
    if (j->dir_fd >= 0)
        close(j->dir_fd);
    free(j->path);
    free(j->dir);
    gw_chain_free(&j->chain);
    gw_segments_free(&j->segs);
    gw_buf_free(&j->epoch_line);
    EVP_MD_CTX_free(j->hash);
    pthread_rwlock_destroy(&j->swap);
    memset(j, 0, sizeof(*j));
    j->fd = -1;
    j->dir_fd = -1;
}

char *gw_journal_segment_path(const struct gw_journal *j, uint64_t first_seq)
{
    char name[GW_SEGMENT_NAME_MAX];
    if (first_seq == atomic_load(&((struct gw_journal *)j)->segment))
        return strdup(j->path);
    gw_segment_name(name, first_seq);
    return join_path(j->dir, name);
}

int gw_journal_has_segment(const struct gw_journal *j, uint64_t first_seq)
{
    if (gw_segments_archived(&j->segs, first_seq))
        return 0;
    if (first_seq == j->segment)
        return !j->create_active;
    for (size_t i = 0; i < j->segs.count; i++)
        if (j->segs.sealed[i].first_seq == first_seq)
            return 1;
    return 0;
}

int gw_journal_set_epoch_line(struct gw_journal *j, const char *line, size_t len)
{
    if (len == 0 || line[len - 1] != '\n')
        return -EBADMSG; /* not a whole line */
    size_t body = len - 1;
    int rc = gw_record_check(line, len - 1, &body);
    if (rc == -EBADMSG)
        return rc;
    gw_buf_reset(&j->epoch_line);
    gw_buf_append(&j->epoch_line, line, rc == 0 ? body : len - 1);
    gw_buf_puts(&j->epoch_line, rc == 0 ? "}\n" : "\n");
    return j->epoch_line.failed ? -ENOMEM : 0;
}

void gw_journal_epoch_entry(struct gw_journal *j, const struct gw_topology *t,
                            enum gw_epoch_source source, uint64_t receipts_ahead,
                            struct gw_epoch_entry *out)
{
    gw_chain_next(&j->chain, t->epoch, ring_id(t->ring), out);
    out->source = source;
    gw_chain_now(out->time);
    out->first_seq = j->last_seq + receipts_ahead + 1;
}

int gw_journal_write_epoch(struct gw_journal *j, const struct gw_topology *t, int *written,
                           struct gw_error *err)
{
    struct gw_epoch_entry latest, e;
    *written = 0;
    if (gw_chain_latest(&j->chain, &latest) && strcmp(latest.epoch, t->epoch) == 0)
        return 0; /* the files name the journal's latest epoch: nothing to record */
    gw_journal_epoch_entry(j, t, GW_SOURCE_START, 0, &e);
    struct gw_buf line;
    gw_buf_init(&line);
    gw_records_epoch_line(&line, &t->contract, &t->members, &e);
    gw_record_end(&line, 0);
    int rc = line.failed ? -ENOMEM : gw_journal_append(j, line.data, line.len, NULL, err);
    if (rc == 0)
        rc = gw_chain_append(&j->chain, &e);
    if (rc == 0)
        rc = gw_journal_set_epoch_line(j, line.data, line.len);
    if (rc == -ENOMEM)
        no_memory(err);
    *written = rc == 0;
    gw_buf_free(&line);
    return rc;
}

static int read_fd(int fd, uint64_t offset, size_t len, char *out)
{
    while (len > 0) {
        ssize_t n = pread(fd, out, len, (off_t)offset);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        out += n;
        len -= (size_t)n;
        offset += (uint64_t)n;
    }
    return 0;
}

/* A sealed segment's receipt: its file opened for the read (docs/journal.md §6). */
static int read_sealed(struct gw_journal *j, uint64_t segment, uint64_t offset, size_t len,
                       char *out)
{
    char name[GW_SEGMENT_NAME_MAX];
    gw_segment_name(name, segment);
    int fd = gw_io.openat(j->dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int rc = read_fd(fd, offset, len, out);
    close(fd);
    return rc;
}

/* The length of a receipt record's bytes before its receipt (gw_records_receipt_prefix). */
static size_t receipt_prefix_len(uint64_t seq)
{
    char digits[24];
    return sizeof("{\"type\":\"receipt\",\"seq\":") - 1 +
           (size_t)snprintf(digits, sizeof(digits), "%llu", (unsigned long long)seq) +
           sizeof(",\"fingerprint\":\"") - 1 + 2 * GW_FINGERPRINT_LEN + sizeof("\",\"receipt\":") -
           1;
}

/* Whether the whole line read is the receipt record of `seq` as its segment's form has it:
 * 0, -EBADMSG or -ENOMSG (its checksum), -EILSEQ (not that record's line). */
static int check_receipt_line(const char *line, size_t len, size_t prefix, uint64_t seq,
                              int checked)
{
    char want[48];
    int w = snprintf(want, sizeof(want), "{\"type\":\"receipt\",\"seq\":%llu,",
                     (unsigned long long)seq);
    if (line[len - 1] != '\n' || memcmp(line, want, (size_t)w) != 0 ||
        memcmp(line + prefix - 1, ":", 1) != 0)
        return -EILSEQ;
    size_t body;
    if (!checked)
        return line[len - 2] == '}' ? 0 : -EILSEQ;
    return gw_record_check(line, len - 1, &body);
}

/* Whether the sound record line names the batch and fingerprint the read expects: the prefix's
 * fingerprint (lowercase hex, docs/journal.md §2) and the receipt's batch_id. 0 or -EXDEV. */
static int names_the_batch(const char *line, size_t prefix, size_t len,
                           const struct gw_receipt_name *name)
{
    static const char hex[] = "0123456789abcdef";
    const char *fp = line + prefix - sizeof("\",\"receipt\":") + 1 - 2 * GW_FINGERPRINT_LEN;
    size_t known = name->fingerprint ? GW_FINGERPRINT_LEN : 8;
    for (size_t i = 0; i < known; i++) {
        unsigned byte = name->fingerprint ? name->fingerprint[i]
                                          : (unsigned)(name->fp_prefix >> (56 - 8 * i)) & 0xff;
        if (fp[2 * i] != hex[byte >> 4] || fp[2 * i + 1] != hex[byte & 15])
            return -EXDEV;
    }
    return gw_receipt_names_batch(line + prefix, len, name->id, name->id_len) ? 0 : -EXDEV;
}

uint64_t gw_journal_receipt_line(uint64_t seq, uint64_t receipt_offset)
{
    size_t prefix = receipt_prefix_len(seq);
    return receipt_offset >= prefix ? receipt_offset - prefix : 0;
}

int gw_journal_read_receipt(struct gw_journal *j, uint64_t segment,
                            const struct gw_receipt_name *name, uint64_t offset, size_t len,
                            struct gw_buf *out)
{
    uint64_t seq = name->seq;
    int checked = segment >= j->checked_from;
    size_t prefix = receipt_prefix_len(seq);
    size_t whole = prefix + len + (checked ? GW_RECORD_TAIL : 1) + 1;
    if (offset < prefix)
        return -EILSEQ;
    struct gw_buf line;
    gw_buf_init(&line);
    int rc = gw_buf_reserve(&line, whole);
    if (rc != 0)
        return rc;
    pthread_rwlock_rdlock(&j->swap);
    int active = segment == atomic_load(&j->segment);
    if (active)
        rc = read_fd(j->fd, offset - prefix, whole, line.data);
    pthread_rwlock_unlock(&j->swap);
    if (!active)
        rc = read_sealed(j, segment, offset - prefix, whole, line.data);
    if (rc == 0)
        rc = check_receipt_line(line.data, whole, prefix, seq, checked);
    if (rc == 0)
        rc = names_the_batch(line.data, prefix, len, name);
    if (rc == 0)
        gw_buf_append(out, line.data + prefix, len);
    gw_buf_free(&line);
    return rc == 0 && out->failed ? -ENOMEM : rc;
}
