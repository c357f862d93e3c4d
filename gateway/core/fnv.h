/* The one hash of ids in the gateway's own tables (not the ring's: ring/ places keys). */
#ifndef SHARDGATE_GW_FNV_H
#define SHARDGATE_GW_FNV_H

#include <stddef.h>
#include <stdint.h>

/* 64-bit FNV-1a of `len` bytes. */
uint64_t gw_fnv1a(const char *s, size_t len);

#endif
