/* The simulator's disk: durable bytes and entries kept beside the files, a crash that keeps
 * only them and a prefix of the rest. */
#include "sim_disk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "iov_join.h"
#include "sim_rng.h"

#define SECTOR 512

enum { CHANGE_WRITE, CHANGE_TRUNCATE };

struct change {
    int kind;
    uint64_t off; /* a write's offset, a truncation's length */
    size_t len;
    unsigned char *data;
};

struct file {
    unsigned char *bytes; /* durable */
    size_t len;
    struct change *changes; /* since the last sync, in order */
    size_t n, cap;
};

struct entry {
    char name[256];
    int id; /* in files, or in dirs when is_dir */
    int is_dir;
};

struct name_op {
    int add; /* 1: name -> id (replacing), 0: name removed, 2: `from` renamed to name */
    struct entry e;
    char from[256];
};

struct dir {
    char path[2048];
    struct entry *entries; /* durable */
    size_t n, cap;
    struct name_op *ops; /* since the last fsync of the directory */
    size_t nops, capops;
};

struct known {
    dev_t dev;
    ino_t ino;
    int id;
    int is_dir;
};

static struct {
    char roots[2][4096];
    struct file *files;
    size_t nfiles, capfiles;
    struct dir *dirs;
    size_t ndirs, capdirs;
    struct known *known; /* the live files and directories by inode */
    size_t nknown, capknown;
    struct sim_rng rng;
    enum sim_fault armed;
    uint64_t at, hit, crashed;
    struct sim_disk_counts counts;
} D;

#define GROW(arr, n, cap)                                                                          \
    do {                                                                                           \
        if ((n) == (cap)) {                                                                        \
            (cap) = (cap) ? 2 * (cap) : 16;                                                        \
            (arr) = realloc((arr), (cap) * sizeof(*(arr)));                                        \
            if (!(arr))                                                                            \
                abort();                                                                           \
        }                                                                                          \
    } while (0)

static struct known *known_of(const struct stat *st)
{
    for (size_t i = 0; i < D.nknown; i++)
        if (D.known[i].ino == st->st_ino && D.known[i].dev == st->st_dev)
            return &D.known[i];
    return NULL;
}

static void know(const struct stat *st, int id, int is_dir)
{
    struct known *k = known_of(st);
    if (!k) {
        GROW(D.known, D.nknown, D.capknown);
        k = &D.known[D.nknown++];
    }
    *k = (struct known){st->st_dev, st->st_ino, id, is_dir};
}

static int new_file(const unsigned char *bytes, size_t len)
{
    GROW(D.files, D.nfiles, D.capfiles);
    struct file *f = &D.files[D.nfiles];
    memset(f, 0, sizeof(*f));
    f->bytes = malloc(len ? len : 1);
    if (!f->bytes)
        abort();
    memcpy(f->bytes, bytes, len);
    f->len = len;
    return (int)D.nfiles++;
}

static int new_dir(const char *path)
{
    GROW(D.dirs, D.ndirs, D.capdirs);
    struct dir *d = &D.dirs[D.ndirs];
    memset(d, 0, sizeof(*d));
    snprintf(d->path, sizeof(d->path), "%s", path);
    return (int)D.ndirs++;
}

/* Applies one name operation to an entry list. */
static void apply_name(struct entry **entries, size_t *n, size_t *cap, const struct name_op *op)
{
    if (op->add == 2) { /* atomic in one directory: both halves or neither */
        struct name_op del = {.add = 0}, add = {.add = 1, .e = op->e};
        snprintf(del.e.name, sizeof(del.e.name), "%s", op->from);
        apply_name(entries, n, cap, &del);
        apply_name(entries, n, cap, &add);
        return;
    }
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*entries)[i].name, op->e.name) == 0) {
            if (op->add)
                (*entries)[i] = op->e;
            else
                (*entries)[i] = (*entries)[--*n];
            return;
        }
    if (op->add) {
        GROW(*entries, *n, *cap);
        (*entries)[(*n)++] = op->e;
    }
}

static struct name_op *add_name_op(int dir, int add, const char *name, int id, int is_dir)
{
    struct dir *d = &D.dirs[dir];
    GROW(d->ops, d->nops, d->capops);
    struct name_op *op = &d->ops[d->nops++];
    memset(op, 0, sizeof(*op));
    op->add = add;
    snprintf(op->e.name, sizeof(op->e.name), "%s", name);
    op->e.id = id;
    op->e.is_dir = is_dir;
    return op;
}

/* Applies one change to bytes. */
static void apply_change(unsigned char **bytes, size_t *len, const struct change *c, size_t keep)
{
    uint64_t end = c->kind == CHANGE_WRITE ? c->off + keep : c->off;
    if (end > *len || c->kind == CHANGE_TRUNCATE) {
        unsigned char *b = realloc(*bytes, end ? end : 1);
        if (!b)
            abort();
        if (end > *len)
            memset(b + *len, 0, end - *len);
        *bytes = b;
        if (c->kind == CHANGE_TRUNCATE || end > *len)
            *len = end;
    }
    if (c->kind == CHANGE_WRITE)
        memcpy(*bytes + c->off, c->data, keep);
}

static void add_change(int id, int kind, uint64_t off, const void *data, size_t len)
{
    struct file *f = &D.files[id];
    GROW(f->changes, f->n, f->cap);
    struct change *c = &f->changes[f->n++];
    c->kind = kind;
    c->off = off;
    c->len = len;
    c->data = NULL;
    if (kind == CHANGE_WRITE) {
        c->data = malloc(len ? len : 1);
        if (!c->data)
            abort();
        memcpy(c->data, data, len);
    }
}

static void sync_file(int id)
{
    struct file *f = &D.files[id];
    for (size_t i = 0; i < f->n; i++) {
        apply_change(&f->bytes, &f->len, &f->changes[i], f->changes[i].len);
        free(f->changes[i].data);
    }
    f->n = 0;
}

static void lose_file_changes(int id)
{
    struct file *f = &D.files[id];
    for (size_t i = 0; i < f->n; i++)
        free(f->changes[i].data);
    D.counts.lost_writes += f->n;
    f->n = 0;
}

static void sync_dir(int id)
{
    struct dir *d = &D.dirs[id];
    for (size_t i = 0; i < d->nops; i++)
        apply_name(&d->entries, &d->n, &d->cap, &d->ops[i]);
    d->nops = 0;
}

/* ---- the roots as they are: all durable ---- */

static int is_index(int dir, const char *name)
{
    return (strcmp(D.dirs[dir].path, D.roots[0]) == 0 ||
            strcmp(D.dirs[dir].path, D.roots[1]) == 0) &&
           strcmp(name, "index") == 0;
}

static int read_all(const char *path, unsigned char **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t cap = 4096, n = 0;
    unsigned char *b = malloc(cap);
    for (;;) {
        if (n == cap) {
            unsigned char *more = realloc(b, cap *= 2);
            if (!more)
                abort();
            b = more;
        }
        ssize_t r = read(fd, b + n, cap - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    *out = b;
    *len = n;
    return 0;
}

static int scan(const char *path)
{
    struct stat st;
    int id = new_dir(path);
    if (stat(path, &st) == 0)
        know(&st, id, 1);
    DIR *dh = opendir(path);
    struct dirent *e;
    while (dh && (e = readdir(dh))) {
        char sub[4096];
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || is_index(id, e->d_name))
            continue;
        snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
        if (lstat(sub, &st) != 0)
            continue;
        struct name_op op = {.add = 1};
        snprintf(op.e.name, sizeof(op.e.name), "%s", e->d_name);
        if (S_ISDIR(st.st_mode)) {
            op.e.is_dir = 1;
            op.e.id = scan(sub);
        } else if (S_ISREG(st.st_mode)) {
            unsigned char *bytes;
            size_t len;
            if (read_all(sub, &bytes, &len) != 0)
                continue;
            op.e.id = new_file(bytes, len);
            free(bytes);
            know(&st, op.e.id, 0);
        } else {
            continue;
        }
        struct dir *d = &D.dirs[id];
        apply_name(&d->entries, &d->n, &d->cap, &op);
    }
    if (dh)
        closedir(dh);
    return id;
}

static void forget_all(void)
{
    for (size_t i = 0; i < D.nfiles; i++) {
        for (size_t k = 0; k < D.files[i].n; k++)
            free(D.files[i].changes[k].data);
        free(D.files[i].changes);
        free(D.files[i].bytes);
    }
    for (size_t i = 0; i < D.ndirs; i++) {
        free(D.dirs[i].entries);
        free(D.dirs[i].ops);
    }
    free(D.files);
    free(D.dirs);
    free(D.known);
    D.files = NULL;
    D.dirs = NULL;
    D.known = NULL;
    D.nfiles = D.capfiles = D.ndirs = D.capdirs = D.nknown = D.capknown = 0;
}

static void scan_roots(void)
{
    scan(D.roots[0]); /* dir 0 */
    scan(D.roots[1]); /* dir 1 */
}

/* ---- the calls ---- */

/* Counts a call on the roots and says whether it fails: 0 it runs, else the fault. With
 * SIM_TRACE set, a fault names its call. */
static enum sim_fault next_call_of(const char *what)
{
    D.counts.calls++;
    if (D.crashed)
        return SIM_CRASH;
    if (D.armed == SIM_NONE)
        return SIM_NONE;
    if (D.at > 1) {
        D.at--;
        return SIM_NONE;
    }
    if (D.armed == SIM_SYNC_LOST && strncmp(what, "d_sync", 6) != 0)
        return SIM_NONE; /* it waits for the next sync */
    enum sim_fault f = D.armed;
    if (getenv("SIM_TRACE"))
        fprintf(stderr, "sim: fault %d at call %llu, %s\n", (int)f,
                (unsigned long long)D.counts.calls, what);
    D.armed = SIM_NONE;
    D.hit = 1;
    if (f == SIM_CRASH)
        D.crashed = 1;
    else
        D.counts.faults++;
    return f;
}

#define next_call() next_call_of(__func__)

static int fail(enum sim_fault f)
{
    errno = f == SIM_ENOSPC ? ENOSPC : EIO;
    return -1;
}

/* The tracked directory holding `path` and the name in it; -1 when not below a root. */
static int parent_of(const char *path, char *name)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return -1;
    char parent[4096];
    snprintf(parent, sizeof(parent), "%.*s", (int)(slash - path), path);
    snprintf(name, 256, "%s", slash + 1);
    struct stat st;
    if (stat(parent, &st) != 0)
        return -1;
    struct known *k = known_of(&st);
    if (!k || !k->is_dir || is_index(k->id, name))
        return -1;
    return k->id;
}

static int file_of_fd(int fd, struct stat *st, int *is_dir)
{
    if (fstat(fd, st) != 0)
        return -1;
    struct known *k = known_of(st);
    if (!k)
        return -1;
    *is_dir = k->is_dir;
    return k->id;
}

static int d_open_path(const char *path, int flags, mode_t mode)
{
    char name[256];
    int dir = parent_of(path, name);
    if (dir < 0)
        return gw_io_libc.open(path, flags, mode);
    enum sim_fault f = next_call();
    if (f != SIM_NONE)
        return fail(f);
    struct stat before;
    int existed = lstat(path, &before) == 0;
    int fd = gw_io_libc.open(path, flags, mode);
    if (fd < 0)
        return fd;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return fd;
    struct known *k = known_of(&st);
    if (!existed || !k) {
        int id = new_file((const unsigned char *)"", 0);
        know(&st, id, 0);
        add_name_op(dir, 1, name, id, 0);
    } else if (flags & O_TRUNC) {
        add_change(k->id, CHANGE_TRUNCATE, 0, NULL, 0);
    }
    return fd;
}

static int d_open(const char *path, int flags, mode_t mode)
{
    return d_open_path(path, flags, mode);
}

static int d_openat(int dir_fd, const char *path, int flags, mode_t mode)
{
    struct stat st;
    int is_dir = 0;
    int id = path[0] == '/' ? -1 : file_of_fd(dir_fd, &st, &is_dir);
    if (id < 0 || !is_dir)
        return path[0] == '/' ? d_open_path(path, flags, mode)
                              : gw_io_libc.openat(dir_fd, path, flags, mode);
    char full[8192];
    snprintf(full, sizeof(full), "%s/%s", D.dirs[id].path, path);
    return d_open_path(full, flags, mode);
}

static ssize_t d_write(int fd, const void *data, size_t len)
{
    struct stat st;
    int is_dir = 0, id = file_of_fd(fd, &st, &is_dir);
    if (id < 0 || is_dir)
        return gw_io_libc.write(fd, data, len);
    enum sim_fault f = next_call();
    if (f == SIM_SHORT && len >= 2)
        len = 1 + (size_t)sim_rng_below(&D.rng, len - 1);
    else if (f != SIM_NONE)
        return fail(f);
    int flags = fcntl(fd, F_GETFL);
    off_t off = (flags & O_APPEND) ? st.st_size : lseek(fd, 0, SEEK_CUR);
    ssize_t n = gw_io_libc.write(fd, data, len);
    if (n > 0)
        add_change(id, CHANGE_WRITE, (uint64_t)off, data, (size_t)n);
    return n;
}

/* A writev is the write of its bytes put together: one call, one fault, one change. */
static ssize_t d_writev(int fd, const struct iovec *iov, int n)
{
    size_t len;
    char *all = iov_join(iov, n, &len);
    if (!all)
        return -1;
    ssize_t w = d_write(fd, all, len);
    free(all);
    return w;
}

static int d_sync(int fd)
{
    struct stat st;
    int is_dir = 0, id = file_of_fd(fd, &st, &is_dir);
    if (id < 0)
        return gw_io_libc.fdatasync(fd);
    enum sim_fault f = next_call_of(is_dir ? "d_sync of a directory" : "d_sync of a file");
    if (f != SIM_NONE) {
        if (f != SIM_CRASH && !is_dir)
            lose_file_changes(id); /* a failed sync's pages are lost, marked clean */
        return fail(f);
    }
    if (is_dir)
        sync_dir(id);
    else
        sync_file(id);
    return 0; /* what is durable is the simulator's to say: no real sync */
}

static int d_ftruncate(int fd, off_t len)
{
    struct stat st;
    int is_dir = 0, id = file_of_fd(fd, &st, &is_dir);
    if (id < 0 || is_dir)
        return gw_io_libc.ftruncate(fd, len);
    enum sim_fault f = next_call();
    if (f != SIM_NONE)
        return fail(f);
    int rc = gw_io_libc.ftruncate(fd, len);
    if (rc == 0)
        add_change(id, CHANGE_TRUNCATE, (uint64_t)len, NULL, 0);
    return rc;
}

static int d_rename(const char *from, const char *to)
{
    char from_name[256], to_name[256];
    int from_dir = parent_of(from, from_name), to_dir = parent_of(to, to_name);
    if (from_dir < 0 && to_dir < 0)
        return gw_io_libc.rename(from, to);
    enum sim_fault f = next_call();
    if (f != SIM_NONE)
        return fail(f);
    struct stat st;
    struct known *k = lstat(from, &st) == 0 ? known_of(&st) : NULL;
    int rc = gw_io_libc.rename(from, to);
    if (rc != 0)
        return rc;
    if (from_dir == to_dir && k) {
        struct name_op *op = add_name_op(to_dir, 2, to_name, k->id, k->is_dir);
        snprintf(op->from, sizeof(op->from), "%s", from_name);
    } else {
        if (from_dir >= 0)
            add_name_op(from_dir, 0, from_name, -1, 0);
        if (to_dir >= 0 && k)
            add_name_op(to_dir, 1, to_name, k->id, k->is_dir);
    }
    if (k && k->is_dir)
        snprintf(D.dirs[k->id].path, sizeof(D.dirs[k->id].path), "%s", to);
    return 0;
}

static int d_unlink(const char *path)
{
    char name[256];
    int dir = parent_of(path, name);
    if (dir < 0)
        return gw_io_libc.unlink(path);
    enum sim_fault f = next_call();
    if (f != SIM_NONE)
        return fail(f);
    int rc = gw_io_libc.unlink(path);
    if (rc == 0)
        add_name_op(dir, 0, name, -1, 0);
    return rc;
}

static int d_mkdir(const char *path, mode_t mode)
{
    char name[256];
    int dir = parent_of(path, name);
    if (dir < 0)
        return gw_io_libc.mkdir(path, mode);
    enum sim_fault f = next_call();
    if (f != SIM_NONE)
        return fail(f);
    int rc = gw_io_libc.mkdir(path, mode);
    struct stat st;
    if (rc == 0 && stat(path, &st) == 0) {
        int id = new_dir(path);
        know(&st, id, 1);
        add_name_op(dir, 1, name, id, 1);
    }
    return rc;
}

static const struct gw_io sim_io = {.open = d_open,
                                    .openat = d_openat,
                                    .write = d_write,
                                    .writev = d_writev,
                                    .fsync = d_sync,
                                    .fdatasync = d_sync,
                                    .ftruncate = d_ftruncate,
                                    .rename = d_rename,
                                    .unlink = d_unlink,
                                    .mkdir = d_mkdir};

void sim_disk_install(const char *root, const char *other_root, uint64_t seed)
{
    memset(&D.counts, 0, sizeof(D.counts));
    snprintf(D.roots[0], sizeof(D.roots[0]), "%s", root);
    snprintf(D.roots[1], sizeof(D.roots[1]), "%s", other_root);
    sim_rng_seed(&D.rng, seed ^ 0x5eedd15cull);
    D.armed = SIM_NONE;
    D.crashed = D.hit = 0;
    scan_roots();
    gw_io = sim_io;
}

void sim_disk_uninstall(void)
{
    gw_io = gw_io_libc;
    forget_all();
}

void sim_disk_arm(enum sim_fault fault, uint64_t at)
{
    D.armed = fault;
    D.at = at ? at : 1;
    D.hit = 0;
}

int sim_disk_hit(void)
{
    return (int)D.hit;
}

/* ---- a crash ---- */

/* The bytes a crash leaves of file `id`: durable, then a prefix of its changes, the last torn. */
static void crash_bytes(int id, unsigned char **out, size_t *len)
{
    struct file *f = &D.files[id];
    *out = malloc(f->len ? f->len : 1);
    memcpy(*out, f->bytes, f->len);
    *len = f->len;
    size_t keep = (size_t)sim_rng_below(&D.rng, f->n + 1);
    for (size_t i = 0; i < keep; i++)
        apply_change(out, len, &f->changes[i], f->changes[i].len);
    D.counts.lost_writes += f->n - keep;
    if (keep < f->n && f->changes[keep].kind == CHANGE_WRITE) {
        const struct change *c = &f->changes[keep];
        uint64_t first = (c->off / SECTOR + 1) * SECTOR; /* the sector boundaries inside it */
        if (first < c->off + c->len) {
            uint64_t bounds = (c->off + c->len - first + SECTOR - 1) / SECTOR;
            uint64_t cut = first + sim_rng_below(&D.rng, bounds) * SECTOR;
            apply_change(out, len, c, (size_t)(cut - c->off));
            D.counts.torn++;
        }
    }
}

static void write_file(const char *path, const unsigned char *bytes, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (fd < 0 || (len && write(fd, bytes, len) != (ssize_t)len)) {
        fprintf(stderr, "sim: cannot rebuild %s\n", path);
        abort();
    }
    close(fd);
}

static void remove_tree(const char *path, int top)
{
    DIR *dh = opendir(path);
    struct dirent *e;
    while (dh && (e = readdir(dh))) {
        char sub[8192];
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            (top && !strcmp(e->d_name, "index")))
            continue;
        snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
        struct stat st;
        if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode)) {
            remove_tree(sub, 0);
            rmdir(sub);
        } else {
            unlink(sub);
        }
    }
    if (dh)
        closedir(dh);
}

/* Rebuilds directory `id` at `path` from what a crash leaves of it. */
static void rebuild(int id, const char *path)
{
    struct dir *d = &D.dirs[id];
    size_t n = d->n;
    size_t cap = n;
    struct entry *entries = malloc((n ? n : 1) * sizeof(*entries));
    if (n)
        memcpy(entries, d->entries, n * sizeof(*entries));
    size_t keep = (size_t)sim_rng_below(&D.rng, d->nops + 1);
    for (size_t i = 0; i < keep; i++)
        apply_name(&entries, &n, &cap, &d->ops[i]);
    for (size_t i = 0; i < n; i++) {
        char sub[8192];
        snprintf(sub, sizeof(sub), "%s/%s", path, entries[i].name);
        if (entries[i].is_dir) {
            mkdir(sub, 0750);
            rebuild(entries[i].id, sub);
        } else {
            unsigned char *bytes;
            size_t len;
            crash_bytes(entries[i].id, &bytes, &len);
            write_file(sub, bytes, len);
            free(bytes);
        }
    }
    free(entries);
}

void sim_disk_crash(int keep_index)
{
    D.counts.crashes++;
    for (int r = 0; r < 2; r++) {
        remove_tree(D.roots[r], 1);
        if (!keep_index) {
            char index[8192];
            snprintf(index, sizeof(index), "%s/index", D.roots[r]);
            remove_tree(index, 0);
            rmdir(index);
        }
        rebuild(r, D.roots[r]);
    }
    forget_all();
    D.armed = SIM_NONE;
    D.crashed = D.hit = 0;
    scan_roots();
}

void sim_disk_settle(void)
{
    forget_all();
    scan_roots();
}

/* ---- latent corruption ---- */

int sim_disk_flip(int seen, char *path)
{
    size_t candidates = 0;
    for (size_t d = 0; d < D.ndirs; d++)
        for (size_t i = 0; i < D.dirs[d].n; i++)
            candidates += !D.dirs[d].entries[i].is_dir && D.files[D.dirs[d].entries[i].id].len;
    if (!candidates)
        return -1;
    size_t pick = (size_t)sim_rng_below(&D.rng, candidates);
    for (size_t d = 0; d < D.ndirs; d++)
        for (size_t i = 0; i < D.dirs[d].n; i++) {
            const struct entry *e = &D.dirs[d].entries[i];
            if (e->is_dir || !D.files[e->id].len || pick-- != 0)
                continue;
            struct file *f = &D.files[e->id];
            size_t at = (size_t)sim_rng_below(&D.rng, f->len);
            unsigned char bit = (unsigned char)(1u << sim_rng_below(&D.rng, 8));
            f->bytes[at] ^= bit;
            snprintf(path, 4096, "%s/%s", D.dirs[d].path, e->name);
            D.counts.flips++;
            struct stat st;
            struct known *k = stat(path, &st) == 0 ? known_of(&st) : NULL;
            if (seen && k && !k->is_dir && k->id == e->id) {
                int fd = open(path, O_RDWR | O_CLOEXEC);
                unsigned char c;
                if (fd >= 0 && pread(fd, &c, 1, (off_t)at) == 1) {
                    c ^= bit;
                    if (pwrite(fd, &c, 1, (off_t)at) != 1)
                        fprintf(stderr, "sim: cannot flip %s\n", path);
                }
                if (fd >= 0)
                    close(fd);
            }
            return 0;
        }
    return -1;
}

const struct sim_disk_counts *sim_disk_counts(void)
{
    return &D.counts;
}

void sim_disk_reseed(uint64_t seed)
{
    sim_rng_seed(&D.rng, seed);
}
