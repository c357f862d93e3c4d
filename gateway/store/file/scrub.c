/* The scrub thread: one pass reads every segment present in seq order at a bounded rate, checks
 * each line of a checked segment and each sealed segment's digest, then pauses. */
#include "scrub.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "feed_segments.h"
#include "log.h"
#include "line_check.h"
#include "segment.h"
#include "timing.h"
#include "io.h"

#define CHUNK (1u << 20)

/* One segment file being read. */
struct pass_file {
    struct gw_scrub *sc;
    const char *name;
    int checked;
    uint64_t end;       /* bytes to read: the durable ones, or those before the seal */
    uint64_t prev_seq;  /* the last receipt seq met */
    EVP_MD_CTX *sha256; /* of the bytes before the seal (sealed segments) */
};

/* Waits until `bytes` read since `t0` fit the rate, or a stop. Returns 1 on a stop. */
static int pace(struct gw_scrub *sc, uint64_t t0, uint64_t bytes)
{
    uint64_t due = t0 + (uint64_t)((double)bytes / (double)sc->rate * 1e9);
    pthread_mutex_lock(&sc->worker.lock);
    while (!sc->worker.stopping && gw_now_ns() < due) {
        uint64_t second = gw_now_ns() + 1000000000u;
        gw_worker_wait_until(&sc->worker, due < second ? due : second);
    }
    int stop = sc->worker.stopping;
    pthread_mutex_unlock(&sc->worker.lock);
    return stop;
}

static void damage(struct pass_file *f, uint64_t offset, uint64_t seq, const char *what)
{
    atomic_fetch_add(&f->sc->metrics->record_damage, 1);
    struct gw_buf fields;
    gw_buf_init(&fields);
    gw_log_str(&fields, "file", f->name);
    gw_log_u64(&fields, "offset", offset);
    gw_log_u64(&fields, "seq", seq);
    gw_log_str(&fields, "what", what);
    gw_log_str(&fields, "by", "scrub");
    gw_log_event("record_checksum_failed", &fields);
}

/* Checks the whole lines of buf[0..len) at file offset `base`; returns the bytes consumed. */
static size_t check_lines(struct pass_file *f, const char *buf, size_t len, uint64_t base)
{
    size_t at = 0;
    for (const char *nl; at < len && (nl = memchr(buf + at, '\n', len - at)) != NULL;) {
        size_t n = (size_t)(nl - (buf + at)), body;
        int rc = f->checked ? gw_record_check(buf + at, n, &body) : 0;
        uint64_t seq = gw_feed_number_after(buf + at, n, "{\"type\":\"receipt\",\"seq\":");
        if (rc != 0)
            damage(f, base + at, f->prev_seq + 1, gw_record_fault(rc));
        else if (seq)
            f->prev_seq = seq;
        at += n + 1;
    }
    return at;
}

/* Reads [0, f->end) of fd at the rate; returns 1 on a stop, -errno, or 0. */
static int read_file(struct pass_file *f, int fd, uint64_t t0, uint64_t *done)
{
    struct gw_buf b;
    gw_buf_init(&b);
    int rc = gw_buf_reserve(&b, CHUNK) ? -ENOMEM : 0;
    uint64_t offset = 0;
    while (rc == 0 && offset + b.len < f->end) {
        if (b.cap - b.len < CHUNK / 4 && gw_buf_reserve(&b, b.cap)) {
            rc = -ENOMEM;
            break;
        }
        size_t want = b.cap - b.len;
        if (want > f->end - offset - b.len)
            want = (size_t)(f->end - offset - b.len);
        ssize_t n = pread(fd, b.data + b.len, want, (off_t)(offset + b.len));
        if (n <= 0) {
            rc = n < 0 ? -errno : 0;
            break;
        }
        if (f->sha256)
            EVP_DigestUpdate(f->sha256, b.data + b.len, (size_t)n);
        b.len += (size_t)n;
        *done += (uint64_t)n;
        size_t used = check_lines(f, b.data, b.len, offset);
        memmove(b.data, b.data + used, b.len - used);
        b.len -= used;
        offset += used;
        atomic_fetch_add(&f->sc->metrics->scrub_bytes, (uint64_t)n);
        if (pace(f->sc, t0, *done))
            rc = 1;
    }
    gw_buf_free(&b);
    return rc;
}

/* The seal of a sealed segment: its byte count and sha256. 0 or -EINVAL. */
static int read_seal(int fd, uint64_t *bytes, char sha[GW_SHA256_HEX + 1])
{
    char buf[512];
    off_t size = lseek(fd, 0, SEEK_END);
    size_t n = size < (off_t)sizeof(buf) ? (size_t)size : sizeof(buf);
    if (size < 2 || pread(fd, buf, n, size - (off_t)n) != (ssize_t)n || buf[n - 1] != '\n')
        return -EINVAL;
    size_t at = n - 1;
    while (at > 0 && buf[at - 1] != '\n')
        at--;
    uint64_t last;
    return gw_segment_parse_seal(buf + at, n - 1 - at, &last, bytes, sha);
}

static int scrub_segment(struct gw_scrub *sc, const struct gw_feed_segment *seg, uint64_t t0,
                         uint64_t *done)
{
    char name[64], path[4200], sha[GW_SHA256_HEX + 1], got[GW_SHA256_HEX + 1];
    gw_feed_segment_name(seg, name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s", sc->dir, name);
    struct pass_file f = {.sc = sc,
                          .name = name,
                          .checked = seg->first_seq >= sc->checked_from,
                          .prev_seq = seg->first_seq - 1};
    pthread_mutex_lock(&sc->worker.lock);
    int durable = seg->active && seg->first_seq == sc->active_first;
    f.end = sc->active_bytes;
    pthread_mutex_unlock(&sc->worker.lock);
    if (seg->active && !durable)
        return 0; /* rotating: the next pass reads it under its sealed name */
    int fd = gw_io.open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0)
        return 0; /* archived or renamed since the listing */
    int rc = 0;
    if (!seg->active) {
        rc = read_seal(fd, &f.end, sha);
        f.sha256 = rc == 0 ? EVP_MD_CTX_new() : NULL;
        if (rc != 0 || !f.sha256 || !EVP_DigestInit_ex(f.sha256, EVP_sha256(), NULL))
            damage(&f, 0, f.prev_seq + 1, "no seal line the scrub can read");
    }
    if (rc == 0)
        rc = read_file(&f, fd, t0, done);
    if (rc == 0 && f.sha256) {
        unsigned char d[EVP_MAX_MD_SIZE];
        unsigned n = 0;
        EVP_DigestFinal_ex(f.sha256, d, &n);
        gw_hex_encode(d, n, got);
        if (strcmp(got, sha) != 0)
            damage(&f, f.end, f.prev_seq, "the seal's sha256 is not that of the bytes before it");
    }
    EVP_MD_CTX_free(f.sha256);
    close(fd);
    return rc;
}

/* One pass over the segments present; 1 when stopped. */
static int scrub_pass(struct gw_scrub *sc)
{
    struct gw_feed_segments segs;
    if (gw_feed_segments_list(sc->dir, &segs) != 0)
        return 0;
    uint64_t t0 = gw_now_ns(), done = 0;
    int rc = 0;
    for (size_t i = 0; rc != 1 && i < segs.count; i++)
        rc = scrub_segment(sc, &segs.list[i], t0, &done);
    gw_feed_segments_free(&segs);
    if (rc == 1)
        return 1;
    atomic_fetch_add(&sc->metrics->scrub_passes, 1);
    atomic_store(&sc->metrics->scrub_last_pass, (unsigned long long)time(NULL));
    return 0;
}

static void *scrub_main(void *arg)
{
    struct gw_scrub *sc = arg;
    while (scrub_pass(sc) == 0) {
        uint64_t until = gw_now_ns() + GW_SCRUB_PAUSE_S * 1000000000ull;
        pthread_mutex_lock(&sc->worker.lock);
        while (!sc->worker.stopping && !gw_worker_wait_until(&sc->worker, until))
            ;
        int stop = sc->worker.stopping;
        pthread_mutex_unlock(&sc->worker.lock);
        if (stop)
            break;
    }
    return NULL;
}

int gw_scrub_start(struct gw_scrub *sc, const char *dir, uint64_t rate, uint64_t checked_from,
                   struct gw_metrics *m)
{
    memset(sc, 0, sizeof(*sc));
    if (rate == 0)
        return 0;
    sc->dir = strdup(dir);
    if (!sc->dir)
        return -ENOMEM;
    sc->rate = rate;
    sc->checked_from = checked_from;
    sc->metrics = m;
    struct gw_buf fields;
    gw_buf_init(&fields);
    gw_log_u64(&fields, "rate", rate);
    gw_log_event("scrub_started", &fields);
    struct gw_error err;
    int rc = gw_worker_start(&sc->worker, scrub_main, sc, "scrub", &err);
    if (rc != 0)
        gw_scrub_stop(sc);
    return rc;
}

void gw_scrub_durable(struct gw_scrub *sc, uint64_t active_first, uint64_t bytes)
{
    if (!sc->dir)
        return;
    pthread_mutex_lock(&sc->worker.lock);
    sc->active_first = active_first;
    sc->active_bytes = bytes;
    pthread_mutex_unlock(&sc->worker.lock);
}

void gw_scrub_stop(struct gw_scrub *sc)
{
    if (!sc->dir)
        return;
    gw_worker_destroy(&sc->worker);
    free(sc->dir);
    memset(sc, 0, sizeof(*sc));
}
