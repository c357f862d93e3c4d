/* The epoch chain in memory: appended by replay and by applied reloads, read by GET /v1/epochs
 * and by the reload path (the latest epoch, for If-Match and the next record's links). */
#include "chain.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const source_names[] = {"start", "sighup", "admin"};

const char *gw_source_name(enum gw_epoch_source s)
{
    return source_names[s];
}

int gw_source_parse(const char *name, enum gw_epoch_source *out)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(name, source_names[i]) == 0) {
            *out = (enum gw_epoch_source)i;
            return 0;
        }
    return -EINVAL;
}

void gw_chain_init(struct gw_epoch_chain *c)
{
    memset(c, 0, sizeof(*c));
    pthread_mutex_init(&c->lock, NULL);
    c->initialized = 1;
}

void gw_chain_free(struct gw_epoch_chain *c)
{
    if (!c->initialized)
        return;
    free(c->entries);
    pthread_mutex_destroy(&c->lock);
    memset(c, 0, sizeof(*c));
}

int gw_chain_append(struct gw_epoch_chain *c, const struct gw_epoch_entry *e)
{
    pthread_mutex_lock(&c->lock);
    int rc = 0;
    if (c->count == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 8;
        void *grown = realloc(c->entries, cap * sizeof(*c->entries));
        if (grown) {
            c->entries = grown;
            c->cap = cap;
        } else {
            rc = -ENOMEM;
        }
    }
    if (rc == 0) {
        /* The chain's links (docs/contract.md §7): +1 and prev = the epoch before. */
        assert(e->epoch_seq == c->count + 1 ||
               (c->count && e->epoch_seq == c->entries[c->count - 1].epoch_seq + 1));
        assert(c->count ? strcmp(e->prev, c->entries[c->count - 1].epoch) == 0 : !e->prev[0]);
        c->entries[c->count++] = *e;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

int gw_chain_latest(struct gw_epoch_chain *c, struct gw_epoch_entry *out)
{
    pthread_mutex_lock(&c->lock);
    int found = c->count > 0;
    if (found)
        *out = c->entries[c->count - 1];
    pthread_mutex_unlock(&c->lock);
    return found;
}

int gw_chain_at(struct gw_epoch_chain *c, uint64_t epoch_seq, struct gw_epoch_entry *out)
{
    pthread_mutex_lock(&c->lock);
    int found = epoch_seq >= 1 && epoch_seq <= c->count;
    if (found)
        *out = c->entries[epoch_seq - 1];
    pthread_mutex_unlock(&c->lock);
    return found;
}

int gw_chain_find(struct gw_epoch_chain *c, const char *id, int by_ring, struct gw_epoch_entry *out)
{
    pthread_mutex_lock(&c->lock);
    int found = 0;
    for (size_t i = c->count; i-- > 0 && !found;) {
        const struct gw_epoch_entry *e = &c->entries[i];
        if (strcmp(by_ring ? e->ring_id : e->epoch, id) == 0) {
            *out = *e;
            found = 1;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return found;
}

void gw_chain_next(struct gw_epoch_chain *c, const char *epoch, const char *ring_id,
                   struct gw_epoch_entry *out)
{
    struct gw_epoch_entry latest;
    memset(out, 0, sizeof(*out));
    int has = gw_chain_latest(c, &latest);
    memcpy(out->epoch, epoch, GW_EPOCH_HEX_LEN + 1);
    memcpy(out->ring_id, ring_id, GW_EPOCH_HEX_LEN + 1);
    out->epoch_seq = has ? latest.epoch_seq + 1 : 1;
    if (has)
        memcpy(out->prev, latest.epoch, GW_EPOCH_HEX_LEN + 1);
}

static void write_hex_or_null(struct gw_buf *out, const char *key, const char *value)
{
    gw_buf_puts(out, key);
    if (!value[0]) {
        gw_buf_puts(out, "null");
        return;
    }
    gw_buf_puts(out, "\"");
    gw_buf_puts(out, value);
    gw_buf_puts(out, "\"");
}

void gw_chain_write_links(struct gw_buf *out, const struct gw_epoch_entry *e)
{
    gw_buf_field_u64(out, ",\"epoch_seq\":", e->epoch_seq);
    write_hex_or_null(out, ",\"prev\":", e->prev);
    gw_buf_puts(out, ",\"source\":\"");
    gw_buf_puts(out, gw_source_name(e->source));
    gw_buf_puts(out, "\"");
    write_hex_or_null(out, ",\"time\":", e->time);
    gw_buf_field_u64(out, ",\"first_seq\":", e->first_seq);
}

void gw_chain_write(struct gw_buf *out, struct gw_epoch_chain *c)
{
    pthread_mutex_lock(&c->lock);
    gw_buf_puts(out, "{\"epochs\":[");
    for (size_t i = 0; i < c->count; i++) {
        const struct gw_epoch_entry *e = &c->entries[i];
        gw_buf_puts(out, i ? ",{\"epoch\":\"" : "{\"epoch\":\"");
        gw_buf_puts(out, e->epoch);
        gw_buf_puts(out, "\",\"ring\":\"");
        gw_buf_puts(out, e->ring_id);
        gw_buf_puts(out, "\"");
        gw_chain_write_links(out, e);
        gw_buf_puts(out, "}");
    }
    gw_buf_puts(out, "]}");
    pthread_mutex_unlock(&c->lock);
}

void gw_chain_now(char out[GW_EPOCH_TIME_LEN + 1])
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(out, GW_EPOCH_TIME_LEN + 1, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, GW_EPOCH_TIME_LEN + 1 - n, ".%03ldZ", ts.tv_nsec / 1000000);
}
