/* The idempotency index (docs/journal.md §9, docs/decisions.md §15): verdicts, replay inserts,
 * persist and reopen, merges, the window, and unusable files opened empty and logged. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "check.h"
#include "idem_fixture.h"

/* Small tables and tiers so that freezes and merges happen with a few thousand ids. */
static const struct gw_idem_tuning small = {.table_slots = 256, .merge_base = 100, .no_thread = 1};

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
    struct gw_idem_ref ref = {0}, stored = {3, 4096, 321, 17};
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
    CHECK_EQ_U64(gw_idem_durable(&t), 1);
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
    CHECK_EQ_U64(open_dir(&t, dir, &small, 0, &d), 0);
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
    CHECK_EQ_U64(open_dir(&t, dir, &small, 0, &d), 0);
    CHECK_EQ_U64(insert(&t, 5, 5), 0);
    CHECK_EQ_U64(insert(&t, 5, 5), 0);
    CHECK_EQ_U64(insert(&t, 5, 6), -EEXIST);
    CHECK_EQ_U64(gw_idem_durable(&t), 1);
    struct gw_error err;
    CHECK_EQ_U64(gw_idem_persist(&t, 5, &err), 0); /* now in a run, not in RAM */
    CHECK_EQ_U64(gw_idem_runs(&t), 1);
    CHECK_EQ_U64(insert(&t, 5, 5), 0);
    CHECK_EQ_U64(insert(&t, 5, 9), -EEXIST);
    CHECK_EQ_U64(gw_idem_durable(&t), 1);
    CHECK_TRUE(fixture_found(&t, 5));
    gw_idem_close(&t);
    fixture_rmtree(dir);
}

/* 5000 ids across frozen tables (256 slots), two persists; all back after reopen. */
static void test_persist_reopen(void)
{
    char dir[64];
    fixture_mkdtemp(dir);
    struct gw_idem t;
    uint64_t d;
    struct gw_error err;
    CHECK_EQ_U64(open_dir(&t, dir, &small, 0, &d), 0);
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
    CHECK_EQ_U64(open_dir(&t, dir, &small, 0, &d), 0);
    CHECK_EQ_U64(d, 5000);
    CHECK_EQ_U64(gw_idem_durable(&t), 5000);
    for (uint64_t n = 1; n <= 5000; n++)
        bad += !fixture_found(&t, n) || fixture_ack(&t, n) != GW_IDEM_REPLAY;
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(fixture_ack(&t, 5001), GW_IDEM_NEW);
    gw_idem_close(&t);
    fixture_rmtree(dir);
}

/* Runs of 100 (tier 0 below 400): four of a tier merge into one of the next. */
static void test_merge(void)
{
    char dir[64];
    fixture_mkdtemp(dir);
    struct gw_idem t;
    uint64_t d;
    struct gw_error err;
    CHECK_EQ_U64(open_dir(&t, dir, &small, 0, &d), 0);
    int bad = 0;
    for (uint64_t n = 1; n <= 2000; n++) {
        bad += fixture_ack(&t, n) != GW_IDEM_NEW;
        if (n % 100 == 0) {
            CHECK_EQ_U64(gw_idem_persist(&t, n, &err), 0);
            CHECK_EQ_U64(gw_idem_maintain(&t, &err), 0);
        }
        if (n == 300 || n == 400)
            CHECK_EQ_U64(gw_idem_runs(&t), n == 300 ? 3 : 1);
    }
    CHECK_EQ_U64(gw_idem_runs(&t), 2);         /* 1600 + 400 */
    CHECK_EQ_U64(fixture_count_files(dir), 4); /* manifest.json, lock and the two runs */
    for (uint64_t n = 1; n <= 2000; n++)
        bad += !fixture_found(&t, n);
    gw_idem_close(&t);
    CHECK_EQ_U64(open_dir(&t, dir, &small, 0, &d), 0);
    CHECK_EQ_U64(d, 2000);
    CHECK_EQ_U64(gw_idem_durable(&t), 2000);
    for (uint64_t n = 1; n <= 2000; n++)
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
    struct gw_idem_tuning tune = small;
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
    CHECK_EQ_U64(open_dir(t, dir, &small, 0, d), 0);
    stderr_back(saved, fd, log, size);
}

/* Persists ids 1..300, then damages one byte of `file` (in index/) at `at`. */
static void persist_then_damage(const char *dir, const char *file, off_t at)
{
    struct gw_idem t;
    uint64_t d;
    struct gw_error err;
    CHECK_EQ_U64(open_dir(&t, dir, &small, 0, &d), 0);
    for (uint64_t n = 1; n <= 300; n++)
        fixture_ack(&t, n);
    CHECK_EQ_U64(gw_idem_persist(&t, 300, &err), 0);
    gw_idem_close(&t);
    char path[256];
    snprintf(path, sizeof(path), "%s/index/%s", dir, file);
    CHECK_EQ_U64(fixture_flip_byte(path, at), 0);
}

static void test_unusable_files(const char *file, off_t at, const char *reason)
{
    char dir[64], log[4096], want[256];
    fixture_mkdtemp(dir);
    persist_then_damage(dir, file, at);
    struct gw_idem t;
    uint64_t d = 99;
    open_logged(&t, dir, &d, log, sizeof(log));
    CHECK_EQ_U64(d, 0);
    CHECK_EQ_U64(gw_idem_durable(&t), 0);
    CHECK_EQ_U64(fixture_found(&t, 1), 0);
    CHECK_EQ_U64(fixture_count_files(dir), 2); /* the run swept: a fresh manifest, the lock */
    snprintf(want, sizeof(want),
             "{\"event\":\"index_unusable\",\"dir\":\"%s/index\",\"reason\":\"%s\"}\n", dir,
             reason);
    CHECK_EQ_STR(log, want);
    CHECK_EQ_U64(fixture_ack(&t, 1), GW_IDEM_NEW); /* the caller re-inserts from the journal */
    gw_idem_close(&t);
    fixture_rmtree(dir);
}

/* A changed record byte is not seen at open (which reads only the digest table) but by the first
 * lookup reading its block: every id of the run then answers -EIO (its block is read by every
 * bracket of a 300-record run), claims nothing, and the block is logged once. */
static void test_bad_block(void)
{
    char dir[64], log[4096], line[256];
    fixture_mkdtemp(dir);
    persist_then_damage(dir, "run-00000000000000000001.idx", 64 + 100 * 64 + 20);
    struct gw_idem t;
    uint64_t d = 0;
    open_logged(&t, dir, &d, log, sizeof(log));
    CHECK_EQ_STR(log, "");
    CHECK_EQ_U64(d, 300);
    int fd, saved = stderr_to_file(dir, &fd);
    uint64_t eio = 0;
    struct gw_idem_ref ref;
    char id[32];
    for (uint64_t n = 1; n <= 300; n++) {
        fixture_id(id, sizeof(id), n);
        eio += gw_idem_find(&t, id, strlen(id), &ref) == -EIO;
    }
    CHECK_EQ_U64(fixture_ack(&t, 7), (enum gw_idem_verdict) - 1);
    CHECK_EQ_U64(fixture_ack(&t, 7), (enum gw_idem_verdict) - 1); /* nothing was claimed */
    stderr_back(saved, fd, log, sizeof(log));
    CHECK_EQ_U64(eio, 300);
    snprintf(line, sizeof(line),
             "{\"event\":\"index_block_corrupt\",\"run\":\"run-00000000000000000001.idx\","
             "\"block\":0}\n");
    CHECK_EQ_STR(log, line);
    gw_idem_close(&t);
    fixture_rmtree(dir);
}

/* Acks ids from..to, then persists them as one run. */
static void ack_run(struct gw_idem *t, uint64_t from, uint64_t to)
{
    struct gw_error err;
    for (uint64_t n = from; n <= to; n++)
        fixture_ack(t, n);
    CHECK_EQ_U64(gw_idem_persist(t, to, &err), 0);
}

/* A merge checks every block of its inputs first: a changed byte in a run it would merge stops
 * the merge (the four runs stay, none gains a fresh checksum over the bad block). Runs of 1,000
 * records: the bad block (records 0..255) is not the filter's, so new ids can still be acked. */
static void test_merge_refuses_bad_block(void)
{
    char dir[64], log[4096], path[256];
    fixture_mkdtemp(dir);
    struct gw_idem t;
    uint64_t d;
    struct gw_error err;
    CHECK_EQ_U64(open_dir(&t, dir, &small, 0, &d), 0);
    for (uint64_t k = 0; k < 3; k++)
        ack_run(&t, k * 1000 + 1, k * 1000 + 1000);
    CHECK_EQ_U64(gw_idem_runs(&t), 3);
    gw_idem_close(&t);
    snprintf(path, sizeof(path), "%s/index/run-00000000000000000002.idx", dir);
    CHECK_EQ_U64(fixture_flip_byte(path, 64 + 10 * 64 + 40), 0);
    CHECK_EQ_U64(open_dir(&t, dir, &small, 0, &d), 0);
    CHECK_EQ_U64(d, 3000);
    int fd, saved = stderr_to_file(dir, &fd);
    ack_run(&t, 3001, 4000);
    CHECK_EQ_U64(gw_idem_runs(&t), 4);
    CHECK_EQ_U64(gw_idem_maintain(&t, &err), (uint64_t)-EIO);
    stderr_back(saved, fd, log, sizeof(log));
    CHECK_EQ_STR(log, "{\"event\":\"index_block_corrupt\",\"run\":\"run-00000000000000000002.idx\","
                      "\"block\":0}\n");
    CHECK_EQ_U64(gw_idem_runs(&t), 4);
    CHECK_EQ_U64(fixture_found(&t, 3500), 1);
    gw_idem_close(&t);
    fixture_rmtree(dir);
}

/* Leftovers of a crash (a temp run, a run no manifest lists) are swept at open. */
static void test_sweep(void)
{
    char dir[64], path[256];
    fixture_mkdtemp(dir);
    persist_then_damage(dir, "manifest.json", 0); /* '{' -> 'z' */
    struct gw_idem t;
    uint64_t d;
    char log[4096];
    open_logged(&t, dir, &d, log, sizeof(log));
    gw_idem_close(&t);
    snprintf(path, sizeof(path), "%s/index/run-00000000000000000009.idx.tmp", dir);
    close(open(path, O_WRONLY | O_CREAT, 0644));
    snprintf(path, sizeof(path), "%s/index/run-00000000000000000003.idx", dir);
    close(open(path, O_WRONLY | O_CREAT, 0644));
    CHECK_EQ_U64(fixture_count_files(dir), 4);
    CHECK_EQ_U64(open_dir(&t, dir, &small, 0, &d), 0);
    CHECK_EQ_U64(fixture_count_files(dir), 2);
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
    CHECK_EQ_U64(open_dir(&t, dir, &small, 0, &d), 0);
    CHECK_EQ_U64(gw_idem_open_tuned(&u, dir, NULL, &small, &d, &err), -EBUSY);
    snprintf(want, sizeof(want), "index: %s/index: in use by another process", dir);
    CHECK_EQ_STR(err.msg, want);
    gw_idem_close(&t);
    CHECK_EQ_U64(open_dir(&u, dir, &small, 0, &d), 0);
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
    test_merge();
    test_window();
    /* byte 56 is the last digit of "durable_seq":300: still valid JSON, caught by the sum */
    test_unusable_files("manifest.json", 56, "manifest checksum mismatch");
    /* 300 records, 6 filter blocks, then the table of 2 block digests */
    test_unusable_files("run-00000000000000000001.idx", 64 + 300 * 64 + 6 * 64 + 37,
                        "run checksum mismatch");
    test_bad_block();
    test_merge_refuses_bad_block();
    test_sweep();
    return CHECK_DONE();
}
