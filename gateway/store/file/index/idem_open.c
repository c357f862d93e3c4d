/* Opening and closing the idempotency index: its directory, its lock and its database
 * (docs/journal.md §9). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include "idem_convert.h"
#include "idem_state.h"
#include "idempotency.h"
#include "io.h"
#include "log.h"

#define INFLIGHT_SLOTS 1024u
#define LOCK_FILE "lock"

uint64_t gw_idem__now(struct gw_idem_state *s)
{
    if (s->tune.now_ms)
        return s->tune.now_ms(s->tune.clock);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int init_state(struct gw_idem_state *s, const char *state_dir,
                      const struct gw_idem_options *o, const struct gw_idem_tuning *tune)
{
    if (tune)
        s->tune = *tune;
    s->window_ms = o ? o->window_ms : 0;
    s->lock_fd = -1;
    snprintf(s->dir, sizeof(s->dir), "%s/index", state_dir);
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->persist_lock, NULL);
    return gw_idem_table_init(&s->inflight, INFLIGHT_SLOTS) ? -ENOMEM : 0;
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

/* Holds <dir>/lock (flock) while open: a second process would find the database held, or sweep
 * it as unusable.
 * Returns 0, or -errno with err filled. */
static int take_lock(struct gw_idem_state *s, struct gw_error *err)
{
    char path[4100];
    snprintf(path, sizeof(path), "%s/%s", s->dir, LOCK_FILE);
    s->lock_fd = gw_io.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (s->lock_fd < 0 || flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        gw_error_set(err, "", "index: %s: %s", s->dir,
                     e == EWOULDBLOCK ? "in use by another process" : strerror(e));
        return e == EWOULDBLOCK ? -EBUSY : -e;
    }
    return 0;
}

/* An index of the earlier version in the directory: its entries converted into the database, or
 * (damaged) logged as unusable, so that the caller re-inserts everything; its files removed. */
static int upgrade(struct gw_idem_state *s, struct gw_error *err)
{
    if (!gw_idem_convert_present(s->dir))
        return 0;
    uint64_t seq = 0, ids = 0;
    char msg[sizeof(s->dir) + 128];
    const char *why = gw_idem_convert(s->dir, s->db, &seq, &ids);
    if (!why && gw_idem_db_persist(s->db, seq, msg, sizeof(msg)) != 0) {
        gw_error_set(err, "", "%s", msg);
        return -EIO;
    }
    if (why) {
        snprintf(msg, sizeof(msg), "written by an earlier version: %s", why);
        gw_idem_log_unusable(s->dir, msg);
    } else {
        s->durable_seq = seq;
        struct gw_buf f;
        gw_buf_init(&f);
        gw_log_str(&f, "dir", s->dir);
        gw_log_u64(&f, "ids", ids);
        gw_log_u64(&f, "durable_seq", seq);
        gw_log_event("index_converted", &f);
    }
    gw_idem_convert_remove(s->dir);
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
    if (rc == 0) {
        char msg[700];
        s->db = gw_idem_db_open(s->dir, &s->durable_seq, msg, sizeof(msg));
        if (!s->db) {
            gw_error_set(err, "", "%s", msg);
            rc = -EIO;
        }
    }
    if (rc == 0)
        rc = upgrade(s, err);
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
    gw_idem_db_close(s->db);
    gw_idem_table_free(&s->inflight);
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* releases the flock */
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->persist_lock);
    free(s);
    t->s = NULL;
}

void gw_idem_discard(const char *state_dir)
{
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/index", state_dir);
    gw_idem_db_sweep(dir);
}
