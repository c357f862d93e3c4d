/* kill -9 of a process in the middle of persists of the idempotency index (docs/journal.md §9):
 * after each kill the index reopens with every id that a returned gw_idem_persist had made
 * durable, at its exact receipt location. Real fork, real SIGKILL. The parent never opens the
 * index itself: RocksDB's background threads would not be in a child forked after
 * (docs/decisions.md §34), so each check runs in a child of its own. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"
#include "idem_fixture.h"

#define ROUNDS 12
#define PERSIST_EVERY 150
#define DEADLINE_MS 60000 /* a hang: a round waits this long for its first report */

/* The child: acknowledges ids from durable_seq + 1 on, persisting every PERSIST_EVERY and
 * reporting each persisted seq on `out`, until killed. */
static void child(const char *dir, int out)
{
    struct gw_idem t;
    uint64_t durable;
    struct gw_error err;
    if (gw_idem_open(&t, dir, NULL, &durable, &err) != 0)
        _exit(2);
    for (uint64_t n = durable + 1;; n++) {
        enum gw_idem_verdict v = fixture_ack(&t, n);
        /* beyond durable_seq an id may already be on disk (a memtable RocksDB flushed itself) */
        if (v != GW_IDEM_NEW && !(v == GW_IDEM_REPLAY && fixture_found(&t, n)))
            _exit(3);
        if (n % PERSIST_EVERY == 0) {
            if (gw_idem_persist(&t, n, &err) != 0)
                _exit(4);
            if (write(out, &n, sizeof(n)) != sizeof(n))
                _exit(5);
        }
    }
}

/* Reads reported seqs for at least `ms` milliseconds and until one beyond `last` came (a slow
 * disk under a parallel test run), within DEADLINE_MS; returns the last one. */
static uint64_t read_reports(int in, uint64_t last, int ms)
{
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    uint64_t first = last;
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        long spent = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
        long left = (last > first || ms == 0 ? ms : DEADLINE_MS) - spent;
        struct pollfd p = {in, POLLIN, 0};
        if (left < 0 || poll(&p, 1, (int)left) <= 0)
            return last;
        uint64_t seq;
        if (read(in, &seq, sizeof(seq)) != sizeof(seq))
            return last;
        last = seq;
    }
}

/* One round: a child killed after `ms`; returns the last seq it reported durable. */
static uint64_t run_and_kill(const char *dir, uint64_t last, int ms)
{
    int fds[2];
    if (pipe(fds) != 0)
        return last;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        child(dir, fds[1]);
    }
    close(fds[1]);
    last = read_reports(fds[0], last, ms);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    last = read_reports(fds[0], last, 0); /* reports written just before the kill */
    close(fds[0]);
    CHECK_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    return last;
}

/* In a child: the index reopens durable through `last` at least, with every id up to it. */
static void check_reopen(const char *dir, uint64_t last)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid != 0) {
        int status = -1;
        waitpid(pid, &status, 0);
        CHECK_REPORT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                     "the check after the kill with %llu durable failed (status %d)",
                     (unsigned long long)last, status);
        return;
    }
    struct gw_idem t;
    uint64_t durable = 0;
    struct gw_error err;
    CHECK_EQ_U64(gw_idem_open(&t, dir, NULL, &durable, &err), 0);
    CHECK_REPORT(durable >= last, "durable_seq %llu < last persisted %llu",
                 (unsigned long long)durable, (unsigned long long)last);
    uint64_t missing = 0;
    for (uint64_t n = 1; n <= last; n++)
        missing += !fixture_found(&t, n);
    CHECK_EQ_U64(missing, 0);
    gw_idem_close(&t);
    fflush(NULL);
    _exit(CHECK_DONE());
}

int main(void)
{
    char dir[64];
    fixture_mkdtemp(dir);
    /* The kill moments are random; SHARDGATE_TEST_SEED replays a run's. */
    const char *seed_env = getenv("SHARDGATE_TEST_SEED");
    unsigned seed = seed_env ? (unsigned)strtoul(seed_env, NULL, 10) : (unsigned)time(NULL);
    printf("seed %u (SHARDGATE_TEST_SEED replays it)\n", seed);
    srand(seed);
    uint64_t last = 0;
    for (int round = 0; round < ROUNDS; round++) {
        last = run_and_kill(dir, last, 40 + rand() % 200);
        check_reopen(dir, last);
    }
    printf("last durable seq %llu after %d kills\n", (unsigned long long)last, ROUNDS);
    CHECK_TRUE(last >= ROUNDS * PERSIST_EVERY); /* the children got work done */
    fixture_rmtree(dir);
    return CHECK_DONE();
}
