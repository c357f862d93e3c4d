/* Opening and closing the idempotency index: the manifest, its runs, the sweep of anything else,
 * and starting empty (logged) when the files are unusable (docs/journal.md §9). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include "idem_manifest.h"
#include "idem_state.h"
#include "idempotency.h"
#include "io.h"
#include "log.h"

#define DEFAULT_TABLE_SLOTS (1u << 18)
#define INFLIGHT_SLOTS 1024u
#define DEFAULT_MERGE_BASE 65536u

uint64_t gw_idem__now(struct gw_idem_state *s)
{
    if (s->tune.now_ms)
        return s->tune.now_ms(s->tune.clock);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void log_unusable(const char *dir, const char *why)
{
    struct gw_buf f;
    gw_buf_init(&f);
    gw_log_str(&f, "dir", dir);
    gw_log_str(&f, "reason", why);
    gw_log_event("index_unusable", &f);
}

/* Maps every run `m` lists into s->runs. Returns NULL, or why one is unusable. */
static const char *load_runs(struct gw_idem_state *s, const struct gw_idem_manifest *m)
{
    struct gw_idem_runset *set = gw_idem__runset_new(m->nruns);
    if (!set)
        return "out of memory";
    const char *why = NULL;
    for (size_t i = 0; i < m->nruns && !why; i++) {
        set->runs[i] =
            gw_idem_run_open(s->dir, m->runs[i].id, m->runs[i].count, m->runs[i].sha256, 1, &why);
        if (!why) {
            s->durable += m->runs[i].count;
            if (m->runs[i].id >= m->next_run)
                why = "run id beyond next_run";
        }
    }
    if (why) {
        set->n = 0;
        for (size_t i = 0; i < m->nruns; i++)
            gw_idem_run_unref(set->runs[i]);
        free(set);
        s->durable = 0;
        return why;
    }
    s->runs = set;
    s->durable_seq = m->durable_seq;
    s->next_run = m->next_run;
    return NULL;
}

/* Reads the manifest and its runs, or starts empty. Returns 0, -ENOMEM or -errno. */
static int load(struct gw_idem_state *s, struct gw_error *err)
{
    struct gw_idem_manifest m;
    const char *why = NULL;
    int rc = gw_idem_manifest_read(s->dir, &m, &why);
    if (rc == -ENOMEM)
        return rc;
    if (rc == 0) {
        why = load_runs(s, &m);
        if (why && strcmp(why, "out of memory") == 0) {
            gw_idem_manifest_free(&m);
            return -ENOMEM;
        }
    }
    if (rc == -EINVAL || (rc == 0 && why))
        log_unusable(s->dir, why);
    if (rc != 0 || why) { /* empty: a fresh manifest first, then nothing else is listed */
        gw_idem_manifest_free(&m);
        memset(&m, 0, sizeof(m));
        m.next_run = 1;
        s->runs = gw_idem__runset_new(0);
        s->next_run = 1;
        s->durable_seq = 0;
        rc = s->runs ? gw_idem__write_manifest(s, s->runs, 0) : -ENOMEM;
        if (rc != 0) {
            gw_error_set(err, "", "%s: cannot write the index manifest: %s", s->dir, strerror(-rc));
            return rc;
        }
    }
    gw_idem_manifest_sweep(s->dir, &m);
    gw_idem_manifest_free(&m);
    return 0;
}

static int init_state(struct gw_idem_state *s, const char *state_dir,
                      const struct gw_idem_options *o, const struct gw_idem_tuning *tune)
{
    if (tune)
        s->tune = *tune;
    if (!s->tune.table_slots)
        s->tune.table_slots = DEFAULT_TABLE_SLOTS;
    if (!s->tune.merge_base)
        s->tune.merge_base = DEFAULT_MERGE_BASE;
    s->window_ms = o ? o->window_ms : 0;
    s->lock_fd = -1;
    snprintf(s->dir, sizeof(s->dir), "%s/index", state_dir);
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->io_lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    if (gw_idem_table_init(&s->inflight, INFLIGHT_SLOTS) ||
        gw_idem_table_init(&s->active, s->tune.table_slots) ||
        gw_idem_table_init(&s->spare, s->tune.table_slots))
        return -ENOMEM;
    return 0;
}

/* fsyncs the directory holding `path`. */
static void sync_parent(const char *path)
{
    char parent[4100];
    snprintf(parent, sizeof(parent), "%s", path);
    char *slash = strrchr(parent, '/');
    if (slash == parent)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(parent, sizeof(parent), ".");
    int fd = gw_io.open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd >= 0) {
        gw_io.fsync(fd);
        close(fd);
    }
}

/* Makes `path` unless it exists; a new directory is synced into its parent, so that a power
 * loss cannot drop it with what it holds. Returns 0 or -errno with err filled. */
static int make_dir(const char *path, mode_t mode, struct gw_error *err)
{
    if (gw_io.mkdir(path, mode) == 0) {
        sync_parent(path);
        return 0;
    }
    if (errno == EEXIST)
        return 0;
    int e = errno;
    gw_error_set(err, "", "index: cannot create %s: %s", path, strerror(e));
    return -e;
}

/* Holds <dir>/lock (flock) while open: a second process would sweep runs the first is writing.
 * Returns 0, or -errno with err filled. */
static int take_lock(struct gw_idem_state *s, struct gw_error *err)
{
    char path[4100];
    snprintf(path, sizeof(path), "%s/%s", s->dir, GW_IDEM_LOCK);
    s->lock_fd = gw_io.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (s->lock_fd < 0 || flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        gw_error_set(err, "", "index: %s: %s", s->dir,
                     e == EWOULDBLOCK ? "in use by another process" : strerror(e));
        return e == EWOULDBLOCK ? -EBUSY : -e;
    }
    return 0;
}

int gw_idem_open_tuned(struct gw_idem *t, const char *state_dir, const struct gw_idem_options *o,
                       const struct gw_idem_tuning *tune, uint64_t *durable_seq,
                       struct gw_error *err)
{
    struct gw_idem_state *s = calloc(1, sizeof(*s));
    t->s = s;
    if (!s)
        return -ENOMEM;
    int rc = init_state(s, state_dir, o, tune);
    if (rc == 0)
        rc = make_dir(s->dir, 0750, err);
    if (rc == 0)
        rc = take_lock(s, err);
    if (rc == 0)
        rc = load(s, err);
    if (rc == 0 && !s->tune.no_thread && gw_idem__thread_start(s) != 0)
        rc = -ENOMEM;
    if (rc == -ENOMEM)
        gw_error_set(err, "", "out of memory");
    if (rc != 0) {
        gw_idem_close(t);
        return rc;
    }
    *durable_seq = s->durable_seq;
    return 0;
}

int gw_idem_open(struct gw_idem *t, const char *state_dir, const struct gw_idem_options *o,
                 uint64_t *durable_seq, struct gw_error *err)
{
    return gw_idem_open_tuned(t, state_dir, o, NULL, durable_seq, err);
}

void gw_idem_close(struct gw_idem *t)
{
    struct gw_idem_state *s = t->s;
    if (!s)
        return;
    gw_idem__thread_stop(s);
    gw_idem_table_free(&s->inflight);
    gw_idem_table_free(&s->active);
    gw_idem_table_free(&s->spare);
    for (size_t i = 0; i < s->nfrozen; i++)
        gw_idem_table_free(&s->frozen[i]);
    free(s->frozen);
    gw_idem__runset_put(s->runs);
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* releases the flock */
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->io_lock);
    pthread_cond_destroy(&s->wake);
    free(s);
    t->s = NULL;
}
