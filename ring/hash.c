/* libring's hashing: one-block SHA-1/MD5 digests as LE32 words, four-lane MD5, key hashes. */
#define OPENSSL_SUPPRESS_DEPRECATED /* see the comment on the digests below */
#include "ring_internal.h"

#include <string.h>

#include <openssl/md5.h>
#include <openssl/sha.h>

/* The digests use OpenSSL's low-level SHA1_* / MD5_* functions on a stack context. In
 * OpenSSL 3 the one-shot SHA1() and EVP_Digest() fetch the algorithm on every call (about
 * 300 ns); EVP with a pre-fetched EVP_MD needs a context per thread. The low-level calls go
 * straight to the block function, allocate nothing and are thread-safe, which is what the
 * lookup path needs. They are deprecated, not removed, in OpenSSL 3.0.
 *
 * Keys and vnode labels are short, so most messages fit one block with their padding: those
 * are padded here and compressed with one SHA1_Transform / MD5_Transform call, which skips
 * the Update/Final bookkeeping (a third of the cost of hashing a 20-byte key). Every caller
 * wants the digest as LE32 words (docs/contract.md "The ring"), so the digest is returned in that
 * form: `w[j]` is LE32(d[4j..4j+3]), W words. */
size_t ring__digest_len(enum ring_digest digest)
{
    return digest == RING_MD5 ? MD5_DIGEST_LENGTH : SHA_DIGEST_LENGTH;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* SHA-1 state words are big-endian digest words; MD5's are little-endian. */
static void sha1_one_block(const void *data, size_t len, uint32_t *w)
{
    unsigned char block[64] = {0};
    memcpy(block, data, len);
    block[len] = 0x80;
    block[62] = (unsigned char)(len >> 5);
    block[63] = (unsigned char)(len << 3);
    SHA_CTX ctx;
    SHA1_Init(&ctx);
    SHA1_Transform(&ctx, block);
    const uint32_t h[5] = {ctx.h0, ctx.h1, ctx.h2, ctx.h3, ctx.h4};
    for (size_t j = 0; j < 5; j++)
        w[j] = __builtin_bswap32(h[j]);
}

static void md5_one_block(const void *data, size_t len, uint32_t *w)
{
    unsigned char block[64] = {0};
    memcpy(block, data, len);
    block[len] = 0x80;
    block[56] = (unsigned char)(len << 3);
    block[57] = (unsigned char)(len >> 5);
    MD5_CTX ctx;
    MD5_Init(&ctx);
    MD5_Transform(&ctx, block);
    w[0] = ctx.A;
    w[1] = ctx.B;
    w[2] = ctx.C;
    w[3] = ctx.D;
}

/* Messages longer than one block go through Update/Final. */
static void sha1_words(const void *data, size_t len, uint32_t *w)
{
    unsigned char out[SHA_DIGEST_LENGTH];
    SHA_CTX ctx;
    if (len <= RING_ONE_BLOCK_MAX) {
        sha1_one_block(data, len, w);
        return;
    }
    SHA1_Init(&ctx);
    SHA1_Update(&ctx, data, len);
    SHA1_Final(out, &ctx);
    for (size_t j = 0; j < SHA_DIGEST_LENGTH / 4; j++)
        w[j] = le32(out + 4 * j);
}

static void md5_words(const void *data, size_t len, uint32_t *w)
{
    unsigned char out[MD5_DIGEST_LENGTH];
    MD5_CTX ctx;
    if (len <= RING_ONE_BLOCK_MAX) {
        md5_one_block(data, len, w);
        return;
    }
    MD5_Init(&ctx);
    MD5_Update(&ctx, data, len);
    MD5_Final(out, &ctx);
    for (size_t j = 0; j < MD5_DIGEST_LENGTH / 4; j++)
        w[j] = le32(out + 4 * j);
}

/* The one place the contract's digest is chosen, for points and keys alike. */
void ring__digest_words(enum ring_digest digest, const void *data, size_t len, uint32_t *w)
{
    if (digest == RING_MD5) {
        md5_words(data, len, w);
    } else {
        sha1_words(data, len, w);
    }
}

/* MD5 of four one-block messages at once. MD5 is one long dependency chain per message, so a
 * single digest leaves most of the core idle; four independent chains side by side (the lane
 * loops below, which compilers also turn into SIMD) finish in little more time than one. This
 * is RFC 1321's compression function, checked against OpenSSL's MD5 in the bench's --check
 * mode and against libmemcached on a million keys. Only the first state word is returned:
 * it is the key hash (LE32 of digest bytes 0..3). */
#define MD5_LANES 4

/* RFC 1321's round functions and one step, applied to the four lanes' registers x0..x3. */
#define MD5_F(b, c, d) ((((c) ^ (d)) & (b)) ^ (d))
#define MD5_G(b, c, d) ((((b) ^ (c)) & (d)) ^ (c))
#define MD5_H(b, c, d) ((b) ^ (c) ^ (d))
#define MD5_I(b, c, d) ((c) ^ ((b) | ~(d)))
#define MD5_STEP(f, a, b, c, d, x, t, s)                                                           \
    do {                                                                                           \
        (a) += MD5_##f((b), (c), (d)) + (x) + (t);                                                 \
        (a) = ((a) << (s) | (a) >> (32 - (s))) + (b);                                              \
    } while (0)
#define MD5_STEP4(f, a, b, c, d, k, t, s)                                                          \
    do {                                                                                           \
        MD5_STEP(f, a##0, b##0, c##0, d##0, m[k][0], t, s);                                        \
        MD5_STEP(f, a##1, b##1, c##1, d##1, m[k][1], t, s);                                        \
        MD5_STEP(f, a##2, b##2, c##2, d##2, m[k][2], t, s);                                        \
        MD5_STEP(f, a##3, b##3, c##3, d##3, m[k][3], t, s);                                        \
    } while (0)

/* The 64 steps on four lanes; m[k][l] is message word k of lane l. Returns A of each lane. */
static void md5_rounds(const uint32_t (*m)[MD5_LANES], uint32_t *out)
{
    uint32_t a0 = 0x67452301, a1 = a0, a2 = a0, a3 = a0;
    uint32_t b0 = 0xefcdab89, b1 = b0, b2 = b0, b3 = b0;
    uint32_t c0 = 0x98badcfe, c1 = c0, c2 = c0, c3 = c0;
    uint32_t d0 = 0x10325476, d1 = d0, d2 = d0, d3 = d0;
    MD5_STEP4(F, a, b, c, d, 0, 0xd76aa478, 7);
    MD5_STEP4(F, d, a, b, c, 1, 0xe8c7b756, 12);
    MD5_STEP4(F, c, d, a, b, 2, 0x242070db, 17);
    MD5_STEP4(F, b, c, d, a, 3, 0xc1bdceee, 22);
    MD5_STEP4(F, a, b, c, d, 4, 0xf57c0faf, 7);
    MD5_STEP4(F, d, a, b, c, 5, 0x4787c62a, 12);
    MD5_STEP4(F, c, d, a, b, 6, 0xa8304613, 17);
    MD5_STEP4(F, b, c, d, a, 7, 0xfd469501, 22);
    MD5_STEP4(F, a, b, c, d, 8, 0x698098d8, 7);
    MD5_STEP4(F, d, a, b, c, 9, 0x8b44f7af, 12);
    MD5_STEP4(F, c, d, a, b, 10, 0xffff5bb1, 17);
    MD5_STEP4(F, b, c, d, a, 11, 0x895cd7be, 22);
    MD5_STEP4(F, a, b, c, d, 12, 0x6b901122, 7);
    MD5_STEP4(F, d, a, b, c, 13, 0xfd987193, 12);
    MD5_STEP4(F, c, d, a, b, 14, 0xa679438e, 17);
    MD5_STEP4(F, b, c, d, a, 15, 0x49b40821, 22);
    MD5_STEP4(G, a, b, c, d, 1, 0xf61e2562, 5);
    MD5_STEP4(G, d, a, b, c, 6, 0xc040b340, 9);
    MD5_STEP4(G, c, d, a, b, 11, 0x265e5a51, 14);
    MD5_STEP4(G, b, c, d, a, 0, 0xe9b6c7aa, 20);
    MD5_STEP4(G, a, b, c, d, 5, 0xd62f105d, 5);
    MD5_STEP4(G, d, a, b, c, 10, 0x02441453, 9);
    MD5_STEP4(G, c, d, a, b, 15, 0xd8a1e681, 14);
    MD5_STEP4(G, b, c, d, a, 4, 0xe7d3fbc8, 20);
    MD5_STEP4(G, a, b, c, d, 9, 0x21e1cde6, 5);
    MD5_STEP4(G, d, a, b, c, 14, 0xc33707d6, 9);
    MD5_STEP4(G, c, d, a, b, 3, 0xf4d50d87, 14);
    MD5_STEP4(G, b, c, d, a, 8, 0x455a14ed, 20);
    MD5_STEP4(G, a, b, c, d, 13, 0xa9e3e905, 5);
    MD5_STEP4(G, d, a, b, c, 2, 0xfcefa3f8, 9);
    MD5_STEP4(G, c, d, a, b, 7, 0x676f02d9, 14);
    MD5_STEP4(G, b, c, d, a, 12, 0x8d2a4c8a, 20);
    MD5_STEP4(H, a, b, c, d, 5, 0xfffa3942, 4);
    MD5_STEP4(H, d, a, b, c, 8, 0x8771f681, 11);
    MD5_STEP4(H, c, d, a, b, 11, 0x6d9d6122, 16);
    MD5_STEP4(H, b, c, d, a, 14, 0xfde5380c, 23);
    MD5_STEP4(H, a, b, c, d, 1, 0xa4beea44, 4);
    MD5_STEP4(H, d, a, b, c, 4, 0x4bdecfa9, 11);
    MD5_STEP4(H, c, d, a, b, 7, 0xf6bb4b60, 16);
    MD5_STEP4(H, b, c, d, a, 10, 0xbebfbc70, 23);
    MD5_STEP4(H, a, b, c, d, 13, 0x289b7ec6, 4);
    MD5_STEP4(H, d, a, b, c, 0, 0xeaa127fa, 11);
    MD5_STEP4(H, c, d, a, b, 3, 0xd4ef3085, 16);
    MD5_STEP4(H, b, c, d, a, 6, 0x04881d05, 23);
    MD5_STEP4(H, a, b, c, d, 9, 0xd9d4d039, 4);
    MD5_STEP4(H, d, a, b, c, 12, 0xe6db99e5, 11);
    MD5_STEP4(H, c, d, a, b, 15, 0x1fa27cf8, 16);
    MD5_STEP4(H, b, c, d, a, 2, 0xc4ac5665, 23);
    MD5_STEP4(I, a, b, c, d, 0, 0xf4292244, 6);
    MD5_STEP4(I, d, a, b, c, 7, 0x432aff97, 10);
    MD5_STEP4(I, c, d, a, b, 14, 0xab9423a7, 15);
    MD5_STEP4(I, b, c, d, a, 5, 0xfc93a039, 21);
    MD5_STEP4(I, a, b, c, d, 12, 0x655b59c3, 6);
    MD5_STEP4(I, d, a, b, c, 3, 0x8f0ccc92, 10);
    MD5_STEP4(I, c, d, a, b, 10, 0xffeff47d, 15);
    MD5_STEP4(I, b, c, d, a, 1, 0x85845dd1, 21);
    MD5_STEP4(I, a, b, c, d, 8, 0x6fa87e4f, 6);
    MD5_STEP4(I, d, a, b, c, 15, 0xfe2ce6e0, 10);
    MD5_STEP4(I, c, d, a, b, 6, 0xa3014314, 15);
    MD5_STEP4(I, b, c, d, a, 13, 0x4e0811a1, 21);
    MD5_STEP4(I, a, b, c, d, 4, 0xf7537e82, 6);
    MD5_STEP4(I, d, a, b, c, 11, 0xbd3af235, 10);
    MD5_STEP4(I, c, d, a, b, 2, 0x2ad7d2bb, 15);
    MD5_STEP4(I, b, c, d, a, 9, 0xeb86d391, 21);
    out[0] = a0 + 0x67452301;
    out[1] = a1 + 0x67452301;
    out[2] = a2 + 0x67452301;
    out[3] = a3 + 0x67452301;
}

/* The key hashes of four keys of at most ONE_BLOCK_MAX bytes each. */
static void md5_hash4(const char *const *key, const size_t *len, uint32_t *out)
{
    uint32_t m[16][MD5_LANES];
    for (int l = 0; l < MD5_LANES; l++) {
        unsigned char block[64] = {0};
        memcpy(block, key[l], len[l]);
        block[len[l]] = 0x80;
        block[56] = (unsigned char)(len[l] << 3);
        block[57] = (unsigned char)(len[l] >> 5);
        for (int k = 0; k < 16; k++)
            m[k][l] = le32(block + 4 * k);
    }
    md5_rounds((const uint32_t(*)[MD5_LANES])m, out);
}

uint64_t ring_digest_u64(enum ring_digest digest, const void *data, size_t len)
{
    uint32_t w[5];
    ring__digest_words(digest, data, len, w);
    return (uint64_t)w[0] | (uint64_t)w[1] << 32;
}

uint32_t ring_hash_key(const struct ring *ring, const void *key, size_t len)
{
    uint32_t w[5];
    ring__digest_words(ring->digest, key, len, w);
    return w[0]; /* the key hash */
}

void ring_hash_keys(const struct ring *ring, const char *const *keys, const size_t *lens, size_t n,
                    uint32_t *hashes)
{
    size_t i = 0;
    while (ring->digest == RING_MD5 && i + MD5_LANES <= n) {
        size_t l = 0;
        while (l < MD5_LANES && lens[i + l] <= RING_ONE_BLOCK_MAX)
            l++;
        if (l < MD5_LANES) { /* a long key: hash it alone and go on after it */
            hashes[i + l] = ring_hash_key(ring, keys[i + l], lens[i + l]);
            for (size_t j = 0; j < l; j++)
                hashes[i + j] = ring_hash_key(ring, keys[i + j], lens[i + j]);
            i += l + 1;
            continue;
        }
        md5_hash4(keys + i, lens + i, hashes + i);
        i += MD5_LANES;
    }
    for (; i < n; i++)
        hashes[i] = ring_hash_key(ring, keys[i], lens[i]);
}
