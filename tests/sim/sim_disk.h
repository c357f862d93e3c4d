/* The simulator's disk (docs/decisions.md §57), under gw_io: the files themselves are the page
 * cache; what is durable is kept beside them: a file's bytes once fsync'd or fdatasync'd, a
 * directory's entries once the directory is fsync'd. A crash (sim_disk_crash) puts back in
 * place only what is durable, plus any prefix of what was written since, torn at a 512-byte
 * sector. Faults on any call: EIO, ENOSPC, a short write, a failed sync (its pages are lost,
 * as Linux does); and a bit flipped in a durable sector. The directory `index/` under a root
 * is the idempotency index's engine's, which writes it itself: it is kept or dropped whole. */
#ifndef SHARDGATE_SIM_DISK_H
#define SHARDGATE_SIM_DISK_H

#include <stdint.h>

enum sim_fault { SIM_NONE, SIM_CRASH, SIM_EIO, SIM_ENOSPC, SIM_SHORT, SIM_SYNC_LOST };

struct sim_disk_counts {
    uint64_t calls;       /* the calls on the roots' files */
    uint64_t crashes;     /* sim_disk_crash */
    uint64_t torn;        /* writes a crash kept a part of */
    uint64_t faults;      /* faults injected (not counting the calls a crash refused) */
    uint64_t flips;       /* bits flipped */
    uint64_t lost_writes; /* writes never made durable that a crash dropped */
};

/* Puts the disk under gw_io over every file below the two roots (each an existing directory),
 * all of whose contents are durable now. */
void sim_disk_install(const char *root, const char *other_root, uint64_t seed);

/* The seed of the choices from now on (a short write's length, a crash's prefixes, a flip). */
void sim_disk_reseed(uint64_t seed);

/* Gives back the libc calls and forgets everything. */
void sim_disk_uninstall(void);

/* Call `at` from now (1 = the next) fails with `fault`; with SIM_CRASH every call from it on
 * fails and does nothing until sim_disk_crash; SIM_SYNC_LOST is the first sync from call `at`
 * on (any failed sync of a file loses its unsynced pages: EIO and ENOSPC at a sync too). */
void sim_disk_arm(enum sim_fault fault, uint64_t at);

/* 1 once an armed fault was injected (and, for a crash, from then on). */
int sim_disk_hit(void);

/* Once no thread of the store runs: the roots become what the disk holds durably, with any
 * prefix of each file's and directory's later changes. `keep_index` 0: index/ is dropped. */
void sim_disk_crash(int keep_index);

/* What the roots hold now becomes durable, as after an operator's edit and `sync`: the store
 * must not run. */
void sim_disk_settle(void);

/* Flips one bit of one durable sector of a file below the roots (not index/), in the durable
 * bytes, and in the file too when `seen` (the next read finds it). Returns 0, or -1 when no file
 * holds a byte. Its path into `path` (4096). */
int sim_disk_flip(int seen, char *path);

const struct sim_disk_counts *sim_disk_counts(void);

#endif
