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

#include "fileio.h"
#include "journal_epoch.h"
#include "ring.h"
#include "timing.h"

/* Replay state: what the lines so far established. */
struct replay {
    struct gw_journal *j;
    gw_journal_visit_fn visit;
    void *ctx;
    struct gw_buf prefix;
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
    int fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) == 0 ? 0 : -errno;
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

/* Out of memory is -ENOMEM, never a fault of the file: exit 1 (docs/decisions.md §12). */
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
    int rc = gw_epoch_record_replay(root, line, len, &r->j->chain, r->j->last_seq, &e, &m, err);
    if (rc != 0)
        return rc;
    struct gw_journal_record rec = {.line = lineno, .members = &m};
    rc = gw_chain_append(&r->j->chain, &e) ? no_memory(err) : r->visit(r->ctx, &rec, err);
    gw_membership_free(&m);
    return rc;
}

/* Checks the record's bytes: the canonical prefix, the receipt, then "}". */
static int check_receipt_bytes(struct replay *r, struct gw_journal_record *rec, const char *line,
                               size_t len, struct gw_error *err)
{
    gw_buf_reset(&r->prefix);
    gw_journal_receipt_prefix(&r->prefix, rec->seq, rec->fingerprint);
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
    int rc = gw_epoch_receipt_link(&r->j->chain, rec->receipt, err);
    if (rc != 0)
        return rc;
    rec->seq = r->j->last_seq + 1;
    unhex(json_string_value(fp), rec->fingerprint, GW_FINGERPRINT_LEN);
    rc = check_receipt_bytes(r, rec, line, len, err);
    if (rc == 0)
        rc = r->visit(r->ctx, rec, err);
    assert(rec->seq == r->j->last_seq + 1); /* seq +1 per receipt (docs/decisions.md §2) */
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
    struct gw_journal_record rec = {.line = lineno, .receipt_offset = offset};
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
    int fd = open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0640);
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
    if (rc == 0 && fsync(fd) != 0)
        rc = -errno;
    if (rc == 0 && (ftruncate(j->fd, (off_t)at) != 0 || fsync(j->fd) != 0))
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

static int replay_all(struct replay *r, const char *data, uint64_t size,
                      struct gw_journal_repair *repair, struct gw_error *err)
{
    uint64_t pos = 0;
    size_t lineno = 1;
    for (; pos < size; lineno++) {
        const char *nl = memchr(data + pos, '\n', size - pos);
        /* Only an unterminated last line can be torn: appends write whole lines, so a complete
         * line that does not replay is damage, never forgiven (docs/operations.md, Journal). */
        if (!nl) {
            *repair = (struct gw_journal_repair){1, lineno, pos, size - pos};
            return cut_tail(r->j, data, pos, size, err);
        }
        int rc = replay_line(r, data + pos, (size_t)(nl - data - pos), pos, lineno, err);
        if (rc != 0) {
            char what[sizeof(err->msg)];
            snprintf(what, sizeof(what), "%s", err->msg);
            gw_error_set(err, "", "journal: %s:%zu: %s", r->j->path, lineno, what);
            return rc;
        }
        pos = (uint64_t)(nl - data) + 1;
    }
    return 0;
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

int gw_journal_make_state_dir(const char *dir, struct gw_error *err)
{
    int created = mkdir(dir, 0750) == 0;
    if (!created && errno != EEXIST) {
        gw_error_set(err, "", "journal: cannot create state dir %s: %s", dir, strerror(errno));
        return -errno;
    }
    if (created)
        sync_parent(dir);
    return check_state_dir(dir, err);
}

/* Opens (creating) and locks the journal file. */
static int open_file(struct gw_journal *j, const char *dir, struct gw_error *err)
{
    int rc = gw_journal_make_state_dir(dir, err);
    if (rc != 0)
        return rc;
    j->path = join_path(dir, GW_JOURNAL_FILE);
    if (!j->path)
        return no_memory(err);
    int existed = access(j->path, F_OK) == 0;
    j->fd = open_state_file(j->path, O_RDWR | O_CREAT | O_APPEND, err);
    if (j->fd < 0) {
        rc = j->fd;
        j->fd = -1;
        return rc;
    }
    struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(j->fd, F_SETLK, &lk) != 0) {
        gw_error_set(err, "", "journal: %s: in use by another process", j->path);
        return -EBUSY;
    }
    if (!existed)
        sync_dir(dir);
    return 0;
}

int gw_journal_open(struct gw_journal *j, const char *dir, gw_journal_visit_fn visit, void *ctx,
                    struct gw_journal_repair *repair, struct gw_error *err)
{
    memset(j, 0, sizeof(*j));
    memset(repair, 0, sizeof(*repair));
    j->fd = -1;
    gw_chain_init(&j->chain);
    int rc = open_file(j, dir, err);
    struct stat st;
    if (rc == 0 && fstat(j->fd, &st) != 0) {
        rc = -errno;
        gw_error_set(err, "", "journal: %s: cannot stat: %s", j->path, strerror(-rc));
    }
    void *data = NULL;
    if (rc == 0 && st.st_size > 0) {
        data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, j->fd, 0);
        rc = data == MAP_FAILED ? -errno : 0;
        if (rc != 0)
            gw_error_set(err, "", "journal: %s: cannot map: %s", j->path, strerror(-rc));
    }
    if (rc == 0 && st.st_size > 0) {
        struct replay r = {.j = j, .visit = visit, .ctx = ctx};
        rc = replay_all(&r, data, (uint64_t)st.st_size, repair, err);
        j->size = repair->torn ? repair->offset : (uint64_t)st.st_size;
        munmap(data, (size_t)st.st_size);
        gw_buf_free(&r.prefix);
    }
    if (rc != 0)
        gw_journal_close(j);
    return rc;
}

void gw_journal_close(struct gw_journal *j)
{
    if (j->fd >= 0)
        close(j->fd);
    free(j->path);
    gw_chain_free(&j->chain);
    memset(j, 0, sizeof(*j));
    j->fd = -1;
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
    gw_journal_epoch_line(&line, &t->contract, &t->members, &e);
    gw_buf_puts(&line, "\n");
    int rc = line.failed ? -ENOMEM : gw_journal_append(j, line.data, line.len, NULL, err);
    if (rc == 0)
        rc = gw_chain_append(&j->chain, &e);
    if (rc == -ENOMEM)
        no_memory(err);
    *written = rc == 0;
    gw_buf_free(&line);
    return rc;
}

void gw_journal_receipt_prefix(struct gw_buf *out, uint64_t seq,
                               const unsigned char fingerprint[GW_FINGERPRINT_LEN])
{
    gw_buf_field_u64(out, "{\"type\":\"receipt\",\"seq\":", seq);
    gw_buf_puts(out, ",\"fingerprint\":\"");
    gw_buf_hex(out, fingerprint, GW_FINGERPRINT_LEN);
    gw_buf_puts(out, "\",\"receipt\":");
}

int gw_journal_append(struct gw_journal *j, const char *data, size_t len, uint64_t *sync_ns,
                      struct gw_error *err)
{
    int rc = gw_file_write_all(j->fd, data, len);
    const char *what = "write";
    if (rc == 0) {
        uint64_t t0 = gw_now_ns();
        what = "fdatasync";
        rc = fdatasync(j->fd) == 0 ? 0 : -errno;
        if (sync_ns)
            *sync_ns = gw_now_ns() - t0;
    }
    if (rc == 0) {
        j->size += len;
        return 0;
    }
    /* No partial line may stay behind: cut back to the last whole, durable line. */
    int cut = ftruncate(j->fd, (off_t)j->size) == 0 && fdatasync(j->fd) == 0;
    gw_error_set(err, "", "journal: %s: %s failed: %s%s", j->path, what, strerror(-rc),
                 cut ? "" : " (and truncating back failed)");
    return rc;
}

int gw_journal_copy(const struct gw_journal *j, uint64_t offset, size_t len, struct gw_buf *out)
{
    int rc = gw_buf_reserve(out, len);
    if (rc == 0)
        rc = gw_journal_read(j, offset, len, out->data + out->len);
    if (rc == 0)
        out->len += len;
    return rc;
}

int gw_journal_read(const struct gw_journal *j, uint64_t offset, size_t len, char *out)
{
    while (len > 0) {
        ssize_t n = pread(j->fd, out, len, (off_t)offset);
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
