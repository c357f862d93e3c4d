/* The inside of the idempotency index, shared by its files (idempotency.c: the request path;
 * idem_open.c). Not for callers. */
#ifndef SHARDGATE_GW_IDEM_STATE_H
#define SHARDGATE_GW_IDEM_STATE_H

#include <pthread.h>

#include "idem_db.h"
#include "idem_table.h"
#include "idem_tuning.h"

struct gw_idem_state {
    pthread_mutex_t lock;          /* the claims and `commits` */
    struct gw_idem_table inflight; /* claims, small: grows with concurrency only */
    uint64_t commits;              /* claims that became durable: a lookup that raced one retries */
    int broken;                    /* an acknowledged id could not be stored: every lookup fails */
    struct gw_idem_db *db;         /* the durable entries */
    pthread_mutex_t persist_lock;  /* one persist at a time */
    uint64_t durable_seq;          /* as the database says */
    int lock_fd;                   /* <dir>/lock, flock'ed while open */
    uint64_t window_ms;
    struct gw_idem_tuning tune;
    char dir[4000]; /* <state-dir>/index */
};

uint64_t gw_idem__now(struct gw_idem_state *s);

#endif
