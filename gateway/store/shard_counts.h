/* A counter per shard id, for the shards that ever counted one: since the process started, like
 * every Prometheus counter (docs/api.md §8). Thread-safe; meant for rare events. */
#ifndef SHARDGATE_GW_SHARD_COUNTS_H
#define SHARDGATE_GW_SHARD_COUNTS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct gw_shard_count;

struct gw_shard_counts {
    pthread_mutex_t lock;
    struct gw_shard_count *by_id; /* bytewise id order */
    size_t count, cap;
};

void gw_shard_counts_init(struct gw_shard_counts *c);
void gw_shard_counts_free(struct gw_shard_counts *c);

/* Adds one to shard `id`'s counter. Returns 0 or -ENOMEM (nothing counted). */
int gw_shard_counts_add(struct gw_shard_counts *c, const char *id, size_t id_len);

/* Shard `id`'s counter; 0 for a shard that never counted. */
uint64_t gw_shard_counts_get(struct gw_shard_counts *c, const char *id, size_t id_len);

#endif
