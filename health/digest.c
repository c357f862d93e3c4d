/* Message digests through libcrypto's EVP API; the context is reused across calls for speed. */
#include <errno.h>
#include <stdlib.h>

#include <openssl/evp.h>

#include "digest.h"

struct hc_digest {
    EVP_MD *md;
    EVP_MD_CTX *ctx;
    size_t size;
};

int hc_digest_open(const char *name, struct hc_digest **out, struct hc_err *err)
{
    struct hc_digest *d = calloc(1, sizeof *d);
    if (d == NULL)
        return hc_err_set(err, -ENOMEM, "out of memory");
    d->md = EVP_MD_fetch(NULL, name, NULL);
    d->ctx = EVP_MD_CTX_new();
    if (d->md == NULL || d->ctx == NULL) {
        hc_digest_close(d);
        return hc_err_set(err, -EINVAL, "libcrypto has no digest %s", name);
    }
    d->size = (size_t)EVP_MD_get_size(d->md);
    *out = d;
    return 0;
}

void hc_digest_close(struct hc_digest *d)
{
    if (d == NULL)
        return;
    EVP_MD_CTX_free(d->ctx);
    EVP_MD_free(d->md);
    free(d);
}

size_t hc_digest_size(const struct hc_digest *d)
{
    return d->size;
}

int hc_digest_begin(struct hc_digest *d)
{
    return EVP_DigestInit_ex2(d->ctx, d->md, NULL) == 1 ? 0 : -EIO;
}

int hc_digest_update(struct hc_digest *d, const void *data, size_t len)
{
    return EVP_DigestUpdate(d->ctx, data, len) == 1 ? 0 : -EIO;
}

int hc_digest_end(struct hc_digest *d, unsigned char *out)
{
    unsigned int n = 0;
    return EVP_DigestFinal_ex(d->ctx, out, &n) == 1 ? 0 : -EIO;
}

int hc_digest_once(struct hc_digest *d, const void *data, size_t len, unsigned char *out)
{
    if (hc_digest_begin(d) != 0 || hc_digest_update(d, data, len) != 0)
        return -EIO;
    return hc_digest_end(d, out);
}

void hc_hex(const unsigned char *bytes, size_t len, char *hex)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        hex[2 * i] = digits[bytes[i] >> 4];
        hex[2 * i + 1] = digits[bytes[i] & 15];
    }
    hex[2 * len] = '\0';
}
