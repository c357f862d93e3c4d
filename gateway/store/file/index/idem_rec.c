/* The 128-bit key of a batch id and the order of index records (docs/journal.md §9). */
#define OPENSSL_SUPPRESS_DEPRECATED /* SHA256_Init/Update/Final: no algorithm fetch per call       \
                                       (ring/hash.c) */
#include "idem_rec.h"

#include <openssl/sha.h>

static uint64_t be64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

struct gw_idem_key gw_idem_key_of(const char *id, size_t len)
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256_CTX c;
    SHA256_Init(&c);
    SHA256_Update(&c, id, len);
    SHA256_Final(md, &c);
    struct gw_idem_key k = {be64(md), be64(md + 8)};
    return k;
}

uint64_t gw_idem_fp_prefix(const unsigned char *fingerprint)
{
    return be64(fingerprint);
}
