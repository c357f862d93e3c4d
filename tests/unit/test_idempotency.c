/* The idempotency index (docs/journal.md §9, docs/decisions.md §15): verdicts, replay inserts,
 * persist and reopen, the window, unusable files opened empty and logged, a damaged block. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "check.h"
#include "idem_fixture.h"

static uint64_t fake_now = 1000;
static uint64_t fake_clock(void *unused)
{
    (void)unused;
    return fake_now;
}

static int open_dir(struct gw_idem *t, const char *dir, const struct gw_idem_tuning *tune,
                    uint64_t window_ms, uint64_t *durable_seq)
{
    struct gw_idem_options o = {window_ms};
    struct gw_error err;
    int rc = gw_idem_open_tuned(t, dir, &o, tune, durable_seq, &err);
    if (rc != 0)
        fprintf(stderr, "open: %s\n", err.msg);
    return rc;
}

static enum gw_idem_verdict claim(struct gw_idem *t, const char *id, int variant,
                                  struct gw_idem_ref *ref)
{
    unsigned char fp[GW_FINGERPRINT_LEN];
    fixture_fp(fp, 7, variant);
    enum gw_idem_verdict v = (enum gw_idem_verdict) - 1;
    CHECK_EQ_U64(gw_idem_claim(t, id, strlen(id), fp, &v, ref), 0);
    return v;
}

static void test_verdicts(void)
{
    char dir[64];
    fixture_mkdtemp(dir);
    struct gw_idem t;
    uint64_t durable_seq = 99;
    CHECK_EQ_U64(open_dir(&t, dir, NULL, 0, &durable_seq), 0);
    CHECK_EQ_U64(durable_seq, 0);
    struct gw_idem_ref ref = {0}, stored = {3, 4096, 321, 17, 0};
    CHECK_EQ_U64(claim(&t, "a", 0, &ref), GW_IDEM_NEW);
    CHECK_EQ_U64(claim(&t, "a", 0, &ref), GW_IDEM_IN_FLIGHT);
    CHECK_EQ_U64(claim(&t, "a", 1, &ref), GW_IDEM_IN_FLIGHT);
    CHECK_EQ_U64(gw_idem_find(&t, "a", 1, &ref), -ENOENT);
    gw_idem_commit(&t, "a", 1, stored);
    CHECK_EQ_U64(claim(&t, "a", 0, &ref), GW_IDEM_REPLAY);
    CHECK_EQ_U64(ref.segment, 3);
    CHECK_EQ_U64(ref.offset, 4096);
    CHECK_EQ_U64(ref.len, 321);
    CHECK_EQ_U64(ref.seq, 17);
    CHECK_EQ_U64(claim(&t, "a", 1, &ref), GW_IDEM_REUSED);
    CHECK_EQ_U64(claim(&t, "b", 0, &ref), GW_IDEM_NEW);
    gw_idem_release(&t, "b", 1);
    CHECK_EQ_U64(claim(&t, "b", 1, &ref), GW_IDEM_NEW); /* released: free again */
    gw_idem_release(&t, "b", 1);
    CHECK_EQ_U64(gw_idem_find(&t, "b", 1, &ref), -ENOENT);
    CHECK_EQ_U64(gw_idem_find(&t, "a", 1, &ref), 0);
    CHECK_EQ_U64(ref.offset, 4096);
    unsigned char fp[GW_FINGERPRINT_LEN]; /* the claim's: its first 8 bytes come with the ref */
    fixture_fp(fp, 7, 0);
    uint64_t prefix = 0;
    for (int i = 0; i < 8; i++)
        prefix = prefix << 8 | fp[i];
    CHECK_EQ_U64(ref.fp_prefix, prefix);
    gw_idem_close(&t);
    fixture_rmtree(dir);
}

/* Many claims at once: the in-flight set grows, and every claim is released whole. */
static void test_many_in_flight(void)
{
    char dir[64], id[32];
    fixture_mkdtemp(dir);
    struct gw_idem t;
    uint64_t d;
    CHECK_EQ_U64(open_dir(&t, dir, NULL, 0, &d), 0);
    struct gw_idem_ref ref;
    unsigned char fp[GW_FINGERPRINT_LEN];
    enum gw_idem_verdict v;
    int bad = 0;
    for (uint64_t i = 0; i < 5000; i++) {
        fixture_id(id, sizeof(id), i);
        fixture_fp(fp, i, 0);
        bad += gw_idem_claim(&t, id, strlen(id), fp, &v, &ref) != 0 || v != GW_IDEM_NEW;
    }
    for (uint64_t i = 0; i < 5000; i += 2) {
        fixture_id(id, sizeof(id), i);
        gw_idem_release(&t, id, strlen(id));
    }
    for (uint64_t i = 0; i < 5000; i++) {
        fixture_id(id, sizeof(id), i);
        fixture_fp(fp, i, 0);
        bad += gw_idem_claim(&t, id, strlen(id), fp, &v, &ref) != 0 ||
               v != (i % 2 ? GW_IDEM_IN_FLIGHT : GW_IDEM_NEW);
    }
    CHECK_EQ_U64(bad, 0);
    gw_idem_close(&t);
    fixture_rmtree(dir);
}

static int insert(struct gw_idem *t, uint64_t n, uint64_t seq)
{
    char id[32];
    unsigned char fp[GW_FINGERPRINT_LEN];
    fixture_id(id, sizeof(id), n);
    fixture_fp(fp, n, 0);
    struct gw_idem_ref ref = fixture_ref(seq);
    return gw_idem_insert(t, id, strlen(id), fp, ref);
}

static void test_insert_idempotent(void)
{
    char dir[64];
    fixture_mkdtemp(dir);
    struct gw_idem t;
    uint64_t d;
    CHECK_EQ_U64(open_dir(&t, dir, NULL, 0, &d), 0);
    CHECK_EQ_U64(insert(&t, 5, 5), 0);
    CHECK_EQ_U64(insert(&t, 5, 5), 0);
    CHECK_EQ_U64(insert(&t, 5, 6), -EEXIST);
    struct gw_error err;
    CHECK_EQ_U64(gw_idem_persist(&t, 5, &err), 0);
    gw_idem_close(&t);
    CHECK_EQ_U64(open_dir(&t, dir, NULL, 0, &d), 0); /* now read from the files */
    CHECK_EQ_U64(d, 5);
    CHECK_EQ_U64(insert(&t, 5, 5), 0);
    CHECK_EQ_U64(insert(&t, 5, 9), -EEXIST);
    CHECK_TRUE(fixture_found(&t, 5));
    gw_idem_close(&t);
    fixture_rmtree(dir);
}

/* 5000 ids, two persists; all back after reopen, durable through the last persist. */
static void test_persist_reopen(void)
{
    char dir[64];
    fixture_mkdtemp(dir);
    struct gw_idem t;
    uint64_t d;
    struct gw_error err;
    CHECK_EQ_U64(open_dir(&t, dir, NULL, 0, &d), 0);
    int bad = 0;
    for (uint64_t n = 1; n <= 5000; n++) {
        bad += fixture_ack(&t, n) != GW_IDEM_NEW;
        if (n == 2500)
            CHECK_EQ_U64(gw_idem_persist(&t, 2500, &err), 0);
    }
    CHECK_EQ_U64(gw_idem_persist(&t, 5000, &err), 0);
    for (uint64_t n = 1; n <= 5000; n++)
        bad += !fixture_found(&t, n);
    gw_idem_close(&t);
    CHECK_EQ_U64(open_dir(&t, dir, NULL, 0, &d), 0);
    CHECK_EQ_U64(d, 5000);
    for (uint64_t n = 1; n <= 5000; n++)
        bad += !fixture_found(&t, n) || fixture_ack(&t, n) != GW_IDEM_REPLAY;
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(fixture_ack(&t, 5001), GW_IDEM_NEW);
    gw_idem_close(&t);
    fixture_rmtree(dir);
}

/* The seq a reopen reports is the last persist's: ids committed after it are re-inserted by the
 * caller from the journal, and an identical re-insert is a no-op wherever the id already is. */
static void test_durable_seq_is_the_last_persist(void)
{
    char dir[64];
    fixture_mkdtemp(dir);
    struct gw_idem t;
    uint64_t d;
    struct gw_error err;
    CHECK_EQ_U64(open_dir(&t, dir, NULL, 0, &d), 0);
    int bad = 0;
    for (uint64_t n = 1; n <= 200; n++) {
        bad += fixture_ack(&t, n) != GW_IDEM_NEW;
        if (n == 120)
            CHECK_EQ_U64(gw_idem_persist(&t, 120, &err), 0);
    }
    CHECK_EQ_U64(gw_idem_persist(&t, 90, &err), 0); /* never backwards */
    gw_idem_close(&t);
    CHECK_EQ_U64(open_dir(&t, dir, NULL, 0, &d), 0);
    CHECK_EQ_U64(d, 120);
    for (uint64_t n = 121; n <= 200; n++)
        bad += insert(&t, n, n) != 0;
    for (uint64_t n = 1; n <= 200; n++)
        bad += !fixture_found(&t, n);
    CHECK_EQ_U64(bad, 0);
    gw_idem_close(&t);
    fixture_rmtree(dir);
}

static void test_window(void)
{
    char dir[64];
    fixture_mkdtemp(dir);
    struct gw_idem t;
    uint64_t d;
    struct gw_error err;
    struct gw_idem_tuning tune = {0};
    tune.now_ms = fake_clock;
    fake_now = 1000;
    CHECK_EQ_U64(open_dir(&t, dir, &tune, 60000, &d), 0);
    struct gw_idem_ref ref;
    CHECK_EQ_U64(claim(&t, "w", 0, &ref), GW_IDEM_NEW);
    gw_idem_commit(&t, "w", 1, fixture_ref(1));
    fake_now = 61000; /* exactly the window ago: still remembered */
    CHECK_EQ_U64(claim(&t, "w", 0, &ref), GW_IDEM_REPLAY);
    CHECK_EQ_U64(claim(&t, "w", 1, &ref), GW_IDEM_REUSED);
    fake_now = 61001;
    CHECK_EQ_U64(claim(&t, "w", 0, &ref), GW_IDEM_EXPIRED);
    CHECK_EQ_U64(claim(&t, "w", 1, &ref), GW_IDEM_EXPIRED);
    CHECK_EQ_U64(gw_idem_persist(&t, 1, &err), 0);
    gw_idem_close(&t);
    fake_now = 10000000; /* long after: expired for ever, never NEW again */
    CHECK_EQ_U64(open_dir(&t, dir, &tune, 60000, &d), 0);
    CHECK_EQ_U64(claim(&t, "w", 0, &ref), GW_IDEM_EXPIRED);
    gw_idem_close(&t);
    fixture_rmtree(dir);
}

/* Sends stderr to <dir>/stderr.log until stderr_back; returns the saved descriptor. */
static int stderr_to_file(const char *dir, int *fd)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/stderr.log", dir);
    fflush(stderr);
    int saved = dup(2);
    *fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    dup2(*fd, 2);
    unlink(path);
    return saved;
}

/* Restores stderr; `log` gets what was written meanwhile. */
static void stderr_back(int saved, int fd, char *log, size_t size)
{
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, log, size - 1, 0);
    log[n > 0 ? n : 0] = '\0';
    close(fd);
}

/* Runs the open with stderr in a file; returns what was logged. */
static void open_logged(struct gw_idem *t, const char *dir, uint64_t *d, char *log, size_t size)
{
    int fd, saved = stderr_to_file(dir, &fd);
    CHECK_EQ_U64(open_dir(t, dir, NULL, 0, d), 0);
    stderr_back(saved, fd, log, size);
}

/* Acks and persists ids 1..300 in a fresh index of `dir`: one table file. */
static void persist_300(const char *dir)
{
    struct gw_idem t;
    uint64_t d;
    struct gw_error err;
    CHECK_EQ_U64(open_dir(&t, dir, NULL, 0, &d), 0);
    for (uint64_t n = 1; n <= 300; n++)
        fixture_ack(&t, n);
    CHECK_EQ_U64(gw_idem_persist(&t, 300, &err), 0);
    gw_idem_close(&t);
}

/* The path of the first file of <dir>/index whose name ends with `suffix`; "" when none. */
static void index_file(const char *dir, const char *suffix, char *out, size_t n)
{
    char sub[64 + 8];
    snprintf(sub, sizeof(sub), "%s/index", dir);
    DIR *d = opendir(sub);
    struct dirent *e;
    out[0] = '\0';
    while (d && !out[0] && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name), sl = strlen(suffix);
        if (len >= sl && strcmp(e->d_name + len - sl, suffix) == 0)
            snprintf(out, n, "%s/%.*s", sub, (int)(n - sizeof(sub) - 1), e->d_name);
    }
    if (d)
        closedir(d);
}

/* 1 when `log` is exactly one line, `prefix` then something holding `part`, then "\"}\n". */
static int one_line_like(const char *log, const char *prefix, const char *part)
{
    size_t len = strlen(log);
    return strncmp(log, prefix, strlen(prefix)) == 0 && strstr(log, part) &&
           strchr(log, '\n') == log + len - 1 && len > 3 && strcmp(log + len - 3, "\"}\n") == 0;
}

/* A file the database cannot open with: logged as index_unusable with RocksDB's reason, its
 * files removed, the index empty (durable_seq 0: the caller re-inserts from the journal). */
static void test_unusable_file(const char *suffix, int truncate_it, const char *reason_part)
{
    char dir[64], log[4096], path[256], prefix[256];
    fixture_mkdtemp(dir);
    persist_300(dir);
    index_file(dir, suffix, path, sizeof(path));
    CHECK_TRUE(path[0] != '\0');
    if (truncate_it)
        CHECK_EQ_U64(truncate(path, 1000), 0);
    else
        CHECK_EQ_U64(fixture_flip_byte(path, 0), 0);
    struct gw_idem t;
    uint64_t d = 99;
    open_logged(&t, dir, &d, log, sizeof(log));
    CHECK_EQ_U64(d, 0);
    CHECK_EQ_U64(fixture_found(&t, 1), 0);
    snprintf(prefix, sizeof(prefix),
             "{\"event\":\"index_unusable\",\"dir\":\"%s/index\",\"reason\":\"", dir);
    CHECK_REPORT(one_line_like(log, prefix, reason_part), "%s damaged: logged %s", suffix, log);
    CHECK_EQ_U64(fixture_ack(&t, 1), GW_IDEM_NEW); /* the caller re-inserts from the journal */
    gw_idem_close(&t);
    fixture_rmtree(dir);
}

/* Files of the earlier, hand-written index that do not check out (an empty manifest): not
 * converted, logged, removed; the index empty and rebuilt by the caller; the lock file stays.
 * (A good one is converted: tests/integration/test_state_mix.py, on tests/golden/.) */
static void test_earlier_format(void)
{
    char dir[64], log[4096], path[256], want[256];
    fixture_mkdtemp(dir);
    snprintf(path, sizeof(path), "%s/index", dir);
    CHECK_EQ_U64(mkdir(path, 0750), 0);
    const char *files[] = {"manifest.json", "run-00000000000000000001.idx", "lock"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/index/%s", dir, files[i]);
        close(open(path, O_WRONLY | O_CREAT, 0644));
    }
    struct gw_idem t;
    uint64_t d = 99;
    open_logged(&t, dir, &d, log, sizeof(log));
    CHECK_EQ_U64(d, 0);
    snprintf(want, sizeof(want),
             "{\"event\":\"index_unusable\",\"dir\":\"%s/index\",\"reason\":\"written by an "
             "earlier version: manifest has no sha256\"}\n",
             dir);
    CHECK_EQ_STR(log, want);
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/index/%s", dir, files[i]);
        CHECK_EQ_U64(access(path, F_OK) == 0, i == 2);
    }
    CHECK_EQ_U64(fixture_ack(&t, 1), GW_IDEM_NEW);
    gw_idem_close(&t);
    fixture_rmtree(dir);
}

/* A changed byte in a data block is not seen at open but by every lookup reading that block:
 * -EIO, nothing claimed, logged once as index_corrupt; ids in other blocks are still found. */
static void test_bad_block(void)
{
    char dir[64], log[4096], path[256], prefix[256];
    fixture_mkdtemp(dir);
    persist_300(dir);
    index_file(dir, ".sst", path, sizeof(path));
    CHECK_EQ_U64(fixture_flip_byte(path, 100), 0); /* inside the first data block */
    struct gw_idem t;
    uint64_t d = 0;
    open_logged(&t, dir, &d, log, sizeof(log));
    CHECK_EQ_STR(log, "");
    CHECK_EQ_U64(d, 300);
    int fd, saved = stderr_to_file(dir, &fd);
    uint64_t eio = 0, found = 0, first_bad = 0;
    struct gw_idem_ref ref;
    char id[32];
    for (uint64_t n = 1; n <= 300; n++) {
        fixture_id(id, sizeof(id), n);
        int rc = gw_idem_find(&t, id, strlen(id), &ref);
        eio += rc == -EIO;
        found += rc == 0 && fixture_found(&t, n);
        if (rc == -EIO && !first_bad)
            first_bad = n;
    }
    CHECK_EQ_U64(fixture_ack(&t, first_bad), (enum gw_idem_verdict) - 1);
    CHECK_EQ_U64(fixture_ack(&t, first_bad), (enum gw_idem_verdict) - 1); /* nothing claimed */
    stderr_back(saved, fd, log, sizeof(log));
    CHECK_EQ_U64(eio + found, 300);
    CHECK_REPORT(eio > 0 && found > 0, "%llu ids failed, %llu found", (unsigned long long)eio,
                 (unsigned long long)found);
    snprintf(prefix, sizeof(prefix),
             "{\"event\":\"index_corrupt\",\"dir\":\"%s/index\",\"error\":\"", dir);
    CHECK_REPORT(one_line_like(log, prefix, "Corruption: block checksum mismatch"), "logged %s",
                 log);
    gw_idem_close(&t);
    fixture_rmtree(dir);
}

/* A lookup that read the database before another request's claim of the same id became
 * durable looks again: it answers what that request left (docs/decisions.md §15). The tuning's
 * `after_read` runs the other request at exactly that moment. */
struct meanwhile {
    struct gw_idem *t;
    int commit; /* the other request is acknowledged (1) or still in flight (0) */
    int calls;
    enum gw_idem_verdict other;
};

static void other_request(void *arg)
{
    struct meanwhile *m = arg;
    if (m->calls++) /* the other request's own lookup, or a look again */
        return;
    char id[32];
    unsigned char fp[GW_FINGERPRINT_LEN];
    struct gw_idem_ref ref;
    fixture_id(id, sizeof(id), 42);
    fixture_fp(fp, 42, 0);
    CHECK_EQ_U64(gw_idem_claim(m->t, id, strlen(id), fp, &m->other, &ref), 0);
    if (m->commit && m->other == GW_IDEM_NEW)
        gw_idem_commit(m->t, id, strlen(id), fixture_ref(42));
}

static void test_claim_between_read_and_second_look(int commit, enum gw_idem_verdict want)
{
    char dir[64], id[32];
    fixture_mkdtemp(dir);
    struct gw_idem t;
    uint64_t d;
    struct meanwhile m = {&t, commit, 0, (enum gw_idem_verdict) - 1};
    struct gw_idem_tuning tune = {0};
    tune.after_read = other_request;
    tune.after_read_arg = &m;
    CHECK_EQ_U64(open_dir(&t, dir, &tune, 0, &d), 0);
    m.calls = 0; /* the open's own reads, if any */
    CHECK_EQ_U64(fixture_ack(&t, 42), want);
    CHECK_EQ_U64(m.other, GW_IDEM_NEW);
    CHECK_EQ_U64(m.calls, commit ? 3 : 2); /* each read of a lookup; a retry reads once more */
    if (!commit) {
        fixture_id(id, sizeof(id), 42);
        gw_idem_release(&t, id, strlen(id));
    }
    m.calls = 1;
    CHECK_EQ_U64(fixture_found(&t, 42), commit);
    gw_idem_close(&t);
    fixture_rmtree(dir);
}

/* The database refuses an acknowledged id (here: its flush cannot write past a file size limit,
 * so RocksDB stops taking writes): the id keeps its claim, every lookup and persist fails from
 * then on, and the reopen reports the last good persist's seq, so that the start re-inserts the
 * rest from the journal (docs/journal.md §9). */
static void test_refused_entry_breaks_the_index(void)
{
    char dir[64], log[4096], prefix[256], want[256];
    fixture_mkdtemp(dir);
    struct gw_idem t;
    uint64_t d;
    struct gw_error err;
    CHECK_EQ_U64(open_dir(&t, dir, NULL, 0, &d), 0);
    for (uint64_t n = 1; n <= 300; n++) {
        CHECK_EQ_U64(fixture_ack(&t, n), GW_IDEM_NEW);
        if (n == 100)
            CHECK_EQ_U64(gw_idem_persist(&t, 100, &err), 0);
    }
    int fd, saved = stderr_to_file(dir, &fd);
    struct rlimit was, low;
    CHECK_EQ_U64(getrlimit(RLIMIT_FSIZE, &was), 0);
    low = was;
    low.rlim_cur = 1024;
    signal(SIGXFSZ, SIG_IGN);
    CHECK_EQ_U64(setrlimit(RLIMIT_FSIZE, &low), 0);
    CHECK_EQ_U64(gw_idem_persist(&t, 300, &err), -EIO);
    CHECK_EQ_U64(setrlimit(RLIMIT_FSIZE, &was), 0);
    snprintf(prefix, sizeof(prefix), "%s/index: IO error: While appending to file: ", dir);
    CHECK_REPORT(strncmp(err.msg, prefix, strlen(prefix)) == 0 && strstr(err.msg, "File too large"),
                 "persist: %s", err.msg);
    CHECK_EQ_U64(fixture_ack(&t, 301), GW_IDEM_NEW); /* claimed; its commit is refused */
    CHECK_EQ_U64(fixture_ack(&t, 301), (enum gw_idem_verdict) - 1);
    CHECK_EQ_U64(fixture_ack(&t, 7), (enum gw_idem_verdict) - 1); /* even one stored before */
    struct gw_idem_ref ref;
    char id[32];
    fixture_id(id, sizeof(id), 7);
    CHECK_EQ_U64(gw_idem_find(&t, id, strlen(id), &ref), -EIO);
    CHECK_EQ_U64(gw_idem_persist(&t, 301, &err), -EIO);
    snprintf(want, sizeof(want), "%s/index: an acknowledged id could not be stored", dir);
    CHECK_EQ_STR(err.msg, want);
    stderr_back(saved, fd, log, sizeof(log));
    snprintf(prefix, sizeof(prefix),
             "{\"event\":\"index_corrupt\",\"dir\":\"%s/index\",\"error\":\"IO error: ", dir);
    CHECK_REPORT(one_line_like(log, prefix, "File too large"), "logged %s", log);
    gw_idem_close(&t);
    CHECK_EQ_U64(open_dir(&t, dir, NULL, 0, &d), 0);
    CHECK_EQ_U64(d, 100);
    CHECK_EQ_U64(fixture_found(&t, 100) + fixture_found(&t, 101) + fixture_found(&t, 301), 1);
    gw_idem_close(&t);
    fixture_rmtree(dir);
}

/* A second opener (another process's server) is refused while the first holds the index. */
static void test_locked(void)
{
    char dir[64], want[256];
    fixture_mkdtemp(dir);
    struct gw_idem t, u;
    uint64_t d;
    struct gw_error err;
    CHECK_EQ_U64(open_dir(&t, dir, NULL, 0, &d), 0);
    CHECK_EQ_U64(gw_idem_open_tuned(&u, dir, NULL, NULL, &d, &err), -EBUSY);
    snprintf(want, sizeof(want), "index: %s/index: in use by another process", dir);
    CHECK_EQ_STR(err.msg, want);
    gw_idem_close(&t);
    CHECK_EQ_U64(open_dir(&u, dir, NULL, 0, &d), 0);
    gw_idem_close(&u);
    fixture_rmtree(dir);
}

int main(void)
{
    test_locked();
    test_verdicts();
    test_many_in_flight();
    test_insert_idempotent();
    test_persist_reopen();
    test_durable_seq_is_the_last_persist();
    test_window();
    test_unusable_file("CURRENT", 0, "Corruption: CURRENT file corrupted");
    test_unusable_file(".sst", 1, "Corruption");
    test_earlier_format();
    test_bad_block();
    test_claim_between_read_and_second_look(1, GW_IDEM_REPLAY);
    test_claim_between_read_and_second_look(0, GW_IDEM_IN_FLIGHT);
    test_refused_entry_breaks_the_index();
    return CHECK_DONE();
}
