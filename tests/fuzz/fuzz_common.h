/* Helpers shared by the fuzz targets: the worked example's files and invariant checks. */
#ifndef SHARDGATE_FUZZ_COMMON_H
#define SHARDGATE_FUZZ_COMMON_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef SHARDGATE_SOURCE_DIR
#error "SHARDGATE_SOURCE_DIR must name the source tree (set by tests/fuzz/CMakeLists.txt)"
#endif

/* The libFuzzer entry point every target defines (replay.c calls it too). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Stops the run with a message: a broken invariant is a finding, like a crash. */
#define FUZZ_REQUIRE(cond)                                                                         \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond);           \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* The path of `rel` under the source tree, in a static buffer. */
static inline const char *fuzz_source_path(const char *rel)
{
    static char path[4096];
    snprintf(path, sizeof(path), "%s/%s", SHARDGATE_SOURCE_DIR, rel);
    return path;
}

/* Reads a file of the source tree into a malloc'd buffer. Aborts when it cannot: a target
 * that cannot set up must not look like a clean run. */
static inline char *fuzz_read_source(const char *rel, size_t *len)
{
    const char *path = fuzz_source_path(rel);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz: cannot open %s\n", path);
        abort();
    }
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            char *grown = realloc(buf, cap);
            FUZZ_REQUIRE(grown != NULL);
            buf = grown;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    FUZZ_REQUIRE(!ferror(f));
    fclose(f);
    *len = n;
    return buf;
}

/* Writes `data` to a per-process scratch file (for readers that only take a path) and
 * returns its path. */
static inline const char *fuzz_scratch_file(const char *suffix, const uint8_t *data, size_t size)
{
    static char path[256];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof(path), "%s/shardgate-fuzz-%ld%s", dir && dir[0] ? dir : "/tmp",
             (long)getpid(), suffix);
    FILE *f = fopen(path, "wb");
    FUZZ_REQUIRE(f != NULL);
    FUZZ_REQUIRE(fwrite(data, 1, size, f) == size);
    FUZZ_REQUIRE(fclose(f) == 0);
    return path;
}

static inline char *fuzz_scratch_dir_name(void)
{
    static char dir[256];
    return dir;
}

/* Removes the scratch directory and what the journal may have left in it. */
static inline void fuzz_scratch_cleanup(void)
{
    const char *dir = fuzz_scratch_dir_name();
    static const char *const names[] = {"journal.jsonl", "journal.jsonl.broken"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        remove(path);
    }
    rmdir(dir);
}

/* A per-process scratch directory, on tmpfs when there is one (the journal fsyncs), created
 * once and removed at exit. */
static inline const char *fuzz_scratch_dir(void)
{
    char *dir = fuzz_scratch_dir_name();
    if (!dir[0]) {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
        snprintf(dir, 256, "%s/shardgate-fuzz-%ld.d", base && base[0] ? base : "/tmp",
                 (long)getpid());
        FUZZ_REQUIRE(mkdir(dir, 0700) == 0 || errno == EEXIST);
        atexit(fuzz_scratch_cleanup);
    }
    return dir;
}

/* 1 when `needle` occurs in data[0..size). */
static inline int fuzz_contains(const uint8_t *data, size_t size, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; n <= size && i <= size - n; i++)
        if (memcmp(data + i, needle, n) == 0)
            return 1;
    return 0;
}

#endif
