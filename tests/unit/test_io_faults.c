/* Faults injected in-process under the file store's system calls (gateway/core/io.h): EIO and
 * ENOSPC at each call, short writes, and a "crash" after the Nth call, after which no call does
 * anything. Files put in place durably (gw_durable_write, docs/decisions.md §14): a failure at
 * any step answers the error and leaves the old file whole and no temporary file; a crash at any
 * step leaves the old file or the new one whole under the name, never a part of either. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "check.h"
#include "dir_listing.h"
#include "faulty_io.h"
#include "fileio.h"

enum fault { FAULT_EIO, FAULT_ENOSPC, FAULT_SHORT, FAULT_CRASH };

static struct {
    enum fault fault;
    int at;    /* the call that fails (1 = the first) */
    int calls; /* calls made so far */
    int hit;   /* 1 once the fault was injected */
} inj;

/* 1 when this call is to fail: the Nth, or with a crash every one from the Nth on. A short
 * write fails nothing: the Nth call, a write, writes one byte (fault_write_len). */
static int fault_here(int writes)
{
    (void)writes;
    inj.calls++;
    if (inj.fault == FAULT_SHORT)
        return 0;
    int now = inj.calls == inj.at || (inj.fault == FAULT_CRASH && inj.calls > inj.at);
    inj.hit |= now;
    if (now)
        errno = inj.fault == FAULT_ENOSPC ? ENOSPC : EIO;
    return now;
}

/* The caller must write the rest. */
static size_t fault_write_len(size_t len)
{
    if (inj.fault != FAULT_SHORT || inj.calls != inj.at || len < 2)
        return len;
    inj.hit = 1;
    return 1;
}

static void inject(enum fault fault, int at)
{
    inj.fault = fault;
    inj.at = at;
    inj.calls = 0;
    inj.hit = 0;
    gw_io = faulty_io;
}

static char dir[] = "/tmp/shardgate-io-faults-XXXXXX";

static const char *listing(void)
{
    return dir_listing(dir);
}

static const char *contents(const char *path)
{
    static char *text;
    size_t len;
    free(text);
    text = NULL;
    return gw_file_read(path, &text, &len) == 0 ? text : "(unreadable)";
}

static const char *fault_name(enum fault f)
{
    return f == FAULT_EIO      ? "EIO"
           : f == FAULT_ENOSPC ? "ENOSPC"
           : f == FAULT_SHORT  ? "short"
                               : "crash";
}

/* One durable write with a fault at call `at`. Returns 1 when the write made that many calls
 * (so a fault at the next one is worth trying). */
static int durable_write_at(enum fault fault, int at)
{
    static const char old[] = "{\"old\":1}\n", new[] = "{\"new\":\"the whole new file\"}\n";
    char path[4096], tmp[4096];
    snprintf(path, sizeof(path), "%s/a.json", dir);
    snprintf(tmp, sizeof(tmp), "%s/a.json.tmp", dir);
    gw_io = gw_io_libc;
    CHECK_EQ_U64(gw_durable_write(path, tmp, old, strlen(old), 0640), 0);
    inject(fault, at);
    int rc = gw_durable_write(path, tmp, new, strlen(new), 0640);
    gw_io = gw_io_libc;
    const char *now = contents(path);
    /* The rename (call 4) is where the new file takes the name, whatever fails after it. */
    const char *want = !inj.hit || fault == FAULT_SHORT || at >= 5 ? new : old;
    CHECK_REPORT(strcmp(now, want) == 0, "%s at call %d: a.json holds \"%s\"", fault_name(fault),
                 at, now);
    if (!inj.hit || fault == FAULT_SHORT) /* a short write is finished by the next ones */
        CHECK_EQ_U64(rc, 0);
    else if (fault == FAULT_CRASH)
        CHECK_REPORT(rc != 0, "crash at call %d: rc 0", at);
    else
        CHECK_REPORT(rc == (fault == FAULT_ENOSPC ? -ENOSPC : -EIO), "%s at call %d: rc %d",
                     fault_name(fault), at, rc);
    if (fault != FAULT_CRASH) /* a crash cannot clean up; the next write truncates the temp */
        CHECK_REPORT(strcmp(listing(), "a.json") == 0, "%s at call %d: left \"%s\"",
                     fault_name(fault), at, listing());
    unlink(tmp);
    return inj.calls >= at;
}

static void test_durable_write_faults(void)
{
    enum fault all[] = {FAULT_EIO, FAULT_ENOSPC, FAULT_SHORT, FAULT_CRASH};
    for (size_t f = 0; f < sizeof(all) / sizeof(all[0]); f++) {
        int at = 1;
        while (durable_write_at(all[f], at) && at < 64)
            at++;
        /* open, write, fsync, rename, open and fsync the directory: six calls */
        CHECK_REPORT(at == 7, "%s: stopped at call %d", fault_name(all[f]), at);
    }
}

/* gw_file_writev_all over 1,500 iovecs (empty ones among them: more than one writev takes) with
 * a short write or an EIO at each of its calls: the file gets every byte in order, or the call's
 * error. */
static void test_writev_all_faults(void)
{
    enum { N = 1500 };
    static struct iovec iov[N];
    static char text[N * 8];
    size_t len = 0;
    for (int i = 0; i < N; i++) {
        iov[i].iov_base = text + len;
        iov[i].iov_len = (size_t)(i % 5 == 0 ? 0 : i % 7 + 1);
        for (size_t k = 0; k < iov[i].iov_len; k++)
            text[len + k] = (char)('a' + (i + (int)k) % 26);
        len += iov[i].iov_len;
    }
    text[len] = '\0';
    char path[4096];
    snprintf(path, sizeof(path), "%s/v.jsonl", dir);
    enum fault all[] = {FAULT_SHORT, FAULT_EIO};
    for (size_t f = 0; f < 2; f++)
        for (int at = 1; at <= 4; at++) {
            int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0640);
            inject(all[f], at);
            int rc = gw_file_writev_all(fd, iov, N);
            int calls = inj.calls;
            gw_io = gw_io_libc;
            close(fd);
            const char *now = contents(path);
            if (all[f] == FAULT_SHORT) {
                CHECK_REPORT(rc == 0 && strcmp(now, text) == 0,
                             "short write at call %d: rc %d, %zu bytes of %zu", at, rc, strlen(now),
                             len);
                /* 1024 iovecs, then the rest; a short one adds a write for its iovec's rest,
                 * then a writev for what follows */
                CHECK_REPORT(calls == (at == 1   ? 4
                                       : at == 2 ? 4
                                                 : 2),
                             "short write at call %d: %d calls", at, calls);
            } else {
                CHECK_REPORT(rc == (at <= 2 ? -EIO : 0), "EIO at call %d: rc %d", at, rc);
            }
        }
    unlink(path);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 2;
    test_durable_write_faults();
    test_writev_all_faults();
    char path[4096];
    snprintf(path, sizeof(path), "%s/a.json", dir);
    unlink(path);
    rmdir(dir);
    return CHECK_DONE();
}
