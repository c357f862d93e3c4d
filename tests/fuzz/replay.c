/* Replays fuzz inputs without libFuzzer: every file named, or in a directory named, goes once
 * through LLVMFuzzerTestOneInput, so plain and sanitizer builds re-run corpora and regressions. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Feeds one file, in a buffer of exactly its size so a sanitizer sees any over-read. Returns 0
 * or -1 when it cannot be read. */
static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        fclose(f);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    uint8_t *data = malloc(size ? size : 1);
    if (!data || fread(data, 1, size, f) != size) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        free(data);
        fclose(f);
        return -1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(data, size);
    free(data);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replays every regular file of `dir` (not dotfiles) in name order. Returns the count or -1. */
static long replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: cannot open directory %s\n", dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **grown = realloc(names, cap * sizeof(*names));
            if (!grown)
                abort();
            names = grown;
        }
        names[n] = strdup(e->d_name);
        if (!names[n++])
            abort();
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof(*names), by_name);
    long count = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (replay_file(path) != 0)
                count = -1;
            else if (count >= 0)
                count++;
        }
        free(names[i]);
    }
    free(names);
    return count;
}

int main(int argc, char **argv)
{
    long total = 0;
    int failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        long n;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: no such file or directory: %s\n", argv[i]);
            failed = 1;
            continue;
        }
        n = S_ISDIR(st.st_mode) ? replay_dir(argv[i]) : (replay_file(argv[i]) == 0 ? 1 : -1);
        if (n < 0)
            failed = 1;
        else
            total += n;
    }
    printf("replay: %ld inputs, no crash\n", total);
    if (total == 0) {
        fprintf(stderr, "replay: no inputs: an empty corpus proves nothing\n");
        return 1;
    }
    return failed;
}
