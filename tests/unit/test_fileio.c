/* Files put in place durably (gateway/core/fileio.c, docs/decisions.md §14): the bytes land
 * under the file's name, the old file is replaced whole, a failure at any step leaves the old
 * file as it was and no temporary file behind, and a file keeps its mode when replaced. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dir_listing.h"
#include "fileio.h"

static char dir[] = "/tmp/shardgate-fileio-XXXXXX";

static void at(char *out, const char *name)
{
    snprintf(out, 4096, "%s/%s", dir, name);
}

static const char *listing(void)
{
    return dir_listing(dir);
}

static const char *contents(const char *name)
{
    static char *text;
    char path[4096];
    size_t len;
    free(text);
    text = NULL;
    at(path, name);
    return gw_file_read(path, &text, &len) == 0 ? text : "(unreadable)";
}

static void test_write_and_replace(void)
{
    char path[4096], tmp[4096];
    at(path, "a.json");
    at(tmp, "a.json.tmp");
    CHECK_EQ_U64(gw_durable_write(path, tmp, "one\n", 4, 0640), 0);
    CHECK_EQ_STR(contents("a.json"), "one\n");
    CHECK_EQ_STR(listing(), "a.json");
    CHECK_EQ_U64(gw_durable_write(path, tmp, "two two\n", 8, 0600), 0);
    CHECK_EQ_STR(contents("a.json"), "two two\n");
    struct stat st;
    CHECK_EQ_U64(stat(path, &st), 0);
    CHECK_EQ_U64(st.st_mode & 07777, 0600);
    /* gw_file_replace keeps the mode the file has */
    CHECK_EQ_U64(chmod(path, 0604), 0);
    CHECK_EQ_U64(gw_file_replace(path, "three\n", 6, 0600), 0);
    CHECK_EQ_STR(contents("a.json"), "three\n");
    CHECK_EQ_U64(stat(path, &st), 0);
    CHECK_EQ_U64(st.st_mode & 07777, 0604);
    CHECK_EQ_STR(listing(), "a.json");
    unlink(path);
}

static void test_failures_leave_nothing_behind(void)
{
    char path[4096], tmp[4096];
    /* the rename fails: its name is a directory */
    at(path, "d");
    CHECK_EQ_U64(mkdir(path, 0700), 0);
    at(tmp, "d/x");
    CHECK_EQ_U64(gw_durable_write(tmp, tmp, "x", 1, 0640), 0);
    at(tmp, "d.tmp");
    CHECK_EQ_U64(-gw_durable_write(path, tmp, "new\n", 4, 0640), EISDIR);
    CHECK_EQ_STR(listing(), "d");
    /* the temporary file cannot be created */
    at(path, "b.json");
    at(tmp, "missing/b.json.tmp");
    CHECK_EQ_U64(-gw_durable_write(path, tmp, "b\n", 2, 0640), ENOENT);
    CHECK_EQ_STR(listing(), "d");
    /* a name too long is refused before anything is created or removed */
    char big[5000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    at(tmp, "b.json.tmp");
    struct gw_durable_file f;
    CHECK_EQ_U64(-gw_durable_open(&f, path, big, 0640), ENAMETOOLONG);
    gw_durable_abandon(&f);
    CHECK_EQ_U64(-gw_durable_open(&f, big, tmp, 0640), ENAMETOOLONG);
    gw_durable_abandon(&f);
    CHECK_EQ_STR(listing(), "d");
    at(tmp, "d/x");
    unlink(tmp);
    at(path, "d");
    rmdir(path);
}

static void test_steps_and_abandon(void)
{
    char path[4096], tmp[4096];
    at(path, "c.json");
    at(tmp, "c.json.tmp");
    CHECK_EQ_U64(gw_durable_write(path, tmp, "old\n", 4, 0640), 0);
    struct gw_durable_file f;
    CHECK_EQ_U64(gw_durable_open(&f, path, tmp, 0640), 0);
    CHECK_EQ_U64(gw_file_write_all(f.fd, "new\n", 4), 0);
    CHECK_EQ_STR(listing(), "c.json c.json.tmp");
    gw_durable_abandon(&f);
    CHECK_EQ_STR(listing(), "c.json");
    CHECK_EQ_STR(contents("c.json"), "old\n");
    CHECK_EQ_U64(gw_durable_open(&f, path, tmp, 0640), 0);
    CHECK_EQ_U64(gw_file_write_all(f.fd, "new\n", 4), 0);
    CHECK_EQ_U64(gw_durable_sync(&f), 0);
    CHECK_EQ_U64(f.fd + 1, 0); /* closed */
    CHECK_EQ_STR(contents("c.json"), "old\n");
    CHECK_EQ_U64(gw_durable_install(&f), 0);
    CHECK_EQ_STR(contents("c.json"), "new\n");
    CHECK_EQ_STR(listing(), "c.json");
    unlink(path);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_write_and_replace();
    test_failures_leave_nothing_behind();
    test_steps_and_abandon();
    rmdir(dir);
    return CHECK_DONE();
}
