/* The idempotency index's engine (docs/journal.md §9, docs/decisions.md §15): a RocksDB
 * database in <state-dir>/index/ mapping the key of a batch id to its record, and the seq the
 * database is durable through. Nothing else in the gateway touches RocksDB. Thread-safe. */
#ifndef SHARDGATE_GW_IDEM_DB_H
#define SHARDGATE_GW_IDEM_DB_H

#include <stddef.h>
#include <stdint.h>

#include "idem_rec.h"

struct gw_idem_db;

/* Opens (creating) the database in `dir`. Files it cannot use (damaged, another format) are
 * logged as index_unusable, every file but the lock is removed, and the database starts empty
 * with *durable_seq 0. Returns the database, or NULL with `msg` filled. */
struct gw_idem_db *gw_idem_db_open(const char *dir, uint64_t *durable_seq, char *msg, size_t n);
void gw_idem_db_close(struct gw_idem_db *db);

/* 1 with *rec when `key` is stored, 0 when not, -EIO when the database failed (a block failed
 * its checksum: logged once as index_corrupt). */
int gw_idem_db_get(struct gw_idem_db *db, struct gw_idem_key key, struct gw_idem_rec *rec);

/* Stores `rec` in RAM (the memtable; no log of its own: the journal is the truth). Returns 0 or
 * -EIO. */
int gw_idem_db_put(struct gw_idem_db *db, const struct gw_idem_rec *rec);

/* The highest seq of any entry the database holds, durable or not (0: none, or an index written
 * before it was kept): past durable_seq when a memtable was flushed on its own. */
uint64_t gw_idem_db_top_seq(struct gw_idem_db *db);

/* Records `durable_seq` and writes everything stored before it to disk (a flush: synced table
 * files and manifest). Returns 0, or -EIO with `msg` filled. */
int gw_idem_db_persist(struct gw_idem_db *db, uint64_t durable_seq, char *msg, size_t n);

/* Logs {"event":"index_unusable","dir":...,"reason":...}. */
void gw_idem_log_unusable(const char *dir, const char *why);

/* Removes every file of `dir` but the lock, with no database open on it: what an index held is
 * derived, and the next open starts it empty. */
void gw_idem_db_sweep(const char *dir);

#endif
