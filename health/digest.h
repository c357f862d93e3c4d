/* Message digests (SHA-1, MD5, SHA-256) through libcrypto's EVP API, with a reusable context. */
#ifndef HC_DIGEST_H
#define HC_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define HC_DIGEST_MAX 32

struct hc_digest;

/* Opens a digest by OpenSSL name ("SHA1", "MD5", "SHA256"). Returns 0, or -ENOMEM / -EINVAL
 * with err filled. */
int hc_digest_open(const char *name, struct hc_digest **out, struct hc_err *err);
void hc_digest_close(struct hc_digest *d);
/* Digest length in bytes. */
size_t hc_digest_size(const struct hc_digest *d);
/* One-shot digest of len bytes into out (hc_digest_size bytes). Returns 0 or -EIO. */
int hc_digest_once(struct hc_digest *d, const void *data, size_t len, unsigned char *out);
/* Streaming: begin, any number of updates, end. Each returns 0 or -EIO. */
int hc_digest_begin(struct hc_digest *d);
int hc_digest_update(struct hc_digest *d, const void *data, size_t len);
int hc_digest_end(struct hc_digest *d, unsigned char *out);
/* Writes 2*len lowercase hex digits and a NUL into hex. */
void hc_hex(const unsigned char *bytes, size_t len, char *hex);

#endif
