/* One entry of the idempotency index (docs/journal.md §9): the 128-bit key of a batch id, a
 * fingerprint prefix and where the receipt lies. 64 bytes: a claim in RAM, and a record of the
 * earlier version's runs (idem_convert.c). */
#ifndef SHARDGATE_GW_IDEM_REC_H
#define SHARDGATE_GW_IDEM_REC_H

#include <stddef.h>
#include <stdint.h>

#define GW_IDEM_REC_USED 1u

struct gw_idem_key {
    uint64_t hi, lo; /* the first 16 bytes of SHA-256(id), each half big-endian */
};

struct gw_idem_rec {
    struct gw_idem_key key;
    uint64_t fp_prefix; /* the first 8 bytes of the batch fingerprint, big-endian */
    uint64_t segment;
    uint64_t offset;
    uint64_t seq;
    uint64_t ack_ms; /* wall clock when acknowledged (or inserted by replay) */
    uint32_t len;
    uint32_t flags; /* GW_IDEM_REC_USED in a table slot or a run */
};

_Static_assert(sizeof(struct gw_idem_rec) == 64, "an index record is 64 bytes");

/* The key of `id` (any bytes). */
struct gw_idem_key gw_idem_key_of(const char *id, size_t len);

/* The first GW_IDEM_FP_PREFIX_LEN bytes of a fingerprint as a number. */
uint64_t gw_idem_fp_prefix(const unsigned char *fingerprint);

static inline int gw_idem_key_eq(struct gw_idem_key a, struct gw_idem_key b)
{
    return a.hi == b.hi && a.lo == b.lo;
}

#endif
