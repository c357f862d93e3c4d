/* The operations table behind store.h: one per store, chosen once by gw_store_open
 * (docs/architecture.md §1). Private to gateway/store/'s top. */
#ifndef SHARDGATE_GW_STORE_OPS_H
#define SHARDGATE_GW_STORE_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "chain.h"
#include "feed_record.h"
#include "idempotency.h"
#include "membership.h"
#include "pg_store.h"
#include "topology.h"

struct gw_store;
struct gw_store_options;
struct gw_store_refusal;
struct gw_store_miss;
struct gw_metrics;
struct gw_feed_mark;
struct gw_ledger_entry;
struct gw_total;
struct gw_commit_item;

struct gw_store_ops {
    const char *check_name; /* gw_store_check_name */
    int holds_membership;   /* gw_store_holds_membership */
    const char *(*damage_what)(int rc);
    void (*segment_file)(struct gw_store *s, uint64_t segment, char *file);
    int (*start)(struct gw_store *s, const struct gw_store_options *o, struct gw_metrics *metrics,
                 struct gw_error *err);
    void (*stop)(struct gw_store *s);
    void (*close)(struct gw_store *s);
    int (*writable)(struct gw_store *s);
    void (*refusal)(struct gw_store *s, struct gw_store_refusal *out);
    int (*claim)(struct gw_store *s, const char *id, size_t len, const unsigned char *fingerprint,
                 enum gw_commit_verdict *verdict, struct gw_buf *stored,
                 struct gw_store_miss *miss);
    void (*release)(struct gw_store *s, const char *id, size_t len);
    void (*submit)(struct gw_store *s, struct gw_commit_item *item);
    int (*read_receipt)(struct gw_store *s, const char *id, size_t len, struct gw_buf *out,
                        struct gw_store_miss *miss);
    int (*feed_read)(struct gw_store *s, uint64_t after, size_t max, gw_feed_visit_fn visit,
                     void *ctx, struct gw_feed_mark *pos, uint64_t *last,
                     struct gw_store_miss *miss);
    uint64_t (*feed_head)(struct gw_store *s);
    int (*shard_totals)(struct gw_store *s, const struct gw_membership *m,
                        struct gw_ledger_entry **out, size_t *count, struct gw_error *err);
    int (*member_totals)(struct gw_store *s, const struct gw_membership *m, const size_t *slots,
                         struct gw_total *out, struct gw_error *err);
    int (*record_epoch)(struct gw_store *s, const struct gw_topology *next,
                        enum gw_epoch_source source, const char *base, struct gw_epoch_entry *entry,
                        struct gw_error *err);
    int (*catch_up)(struct gw_store *s, gw_epoch_fn apply, void *ctx, struct gw_error *err);
    struct gw_epoch_chain *(*chain)(struct gw_store *s);
    int (*epoch_record)(struct gw_store *s, const struct gw_epoch_entry *e, struct gw_buf *out,
                        struct gw_error *err);
};

/* file/store_file.c and file/store_file_open.c: the state dir's store. */
extern const struct gw_store_ops gw_store_file_ops;
int gw_store_open_file(struct gw_store *s, const struct gw_store_options *o,
                       const struct gw_topology *topo, struct gw_error *err);
int gw_store_start_file(struct gw_store *s, const struct gw_store_options *o,
                        struct gw_metrics *metrics, struct gw_error *err);

/* pg/store_pg.c: the database's; sets s->ops once open. */
extern const struct gw_store_ops gw_store_pg_ops;
int gw_store_open_pg(struct gw_store *s, const struct gw_store_options *o, struct gw_topology *topo,
                     struct gw_metrics *metrics, struct gw_error *err);

#endif
