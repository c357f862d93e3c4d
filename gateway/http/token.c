/* Loading --token-file: one trim for the file and the header, and no token that cannot be
 * sent back in an Authorization header. */
#include "token.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "fileio.h"
#include "http.h"

/* The first control character of the token (a second line included), or -1. */
static int control_character(const char *t, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)t[i] < 0x20 || t[i] == 0x7f)
            return (unsigned char)t[i];
    return -1;
}

static int check_token(const char *path, const char *t, size_t len, struct gw_error *err)
{
    int c = control_character(t, len);
    if (len == 0) {
        gw_error_set(err, "", "token: %s: must hold one non-empty line (blanks do not count)",
                     path);
        return -EINVAL;
    }
    if (c >= 0) {
        gw_error_set(err, "",
                     "token: %s: holds control character 0x%02x: the token must be one "
                     "line of printable characters",
                     path, c);
        return -EINVAL;
    }
    return 0;
}

int gw_token_load(const char *path, unsigned char digest[GW_TOKEN_DIGEST_LEN], mode_t *mode,
                  struct gw_error *err)
{
    char *text;
    size_t len;
    struct stat st;
    int rc = gw_file_read(path, &text, &len);
    if (rc == 0 && stat(path, &st) != 0) {
        rc = -errno;
        free(text);
    }
    if (rc != 0) {
        gw_error_set(err, "", "token: %s: cannot read: %s", path, strerror(-rc));
        return rc;
    }
    *mode = st.st_mode & 07777;
    size_t total = len;
    const char *t = text;
    gw_http_trim(&t, &len);
    rc = check_token(path, t, len, err);
    if (rc == 0 && !EVP_Digest(t, len, digest, NULL, EVP_sha256(), NULL)) {
        gw_error_set(err, "", "out of memory");
        rc = -ENOMEM;
    }
    OPENSSL_cleanse(text, total);
    free(text);
    return rc;
}
