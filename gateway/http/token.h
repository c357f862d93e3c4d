/* The bearer token file of `shardgate serve --token-file` (docs/api.md §11). */
#ifndef SHARDGATE_GW_TOKEN_H
#define SHARDGATE_GW_TOKEN_H

#include <sys/types.h>

#include "error.h"

#define GW_TOKEN_DIGEST_LEN 32

/* Reads the token at `path`, trimmed as the Authorization header is (gw_http_trim), and keeps
 * only its SHA-256 in `digest`. Refuses a file that cannot be read, a token that is empty or
 * whitespace only, or one holding a control character (a second line included). Sets *mode
 * to the file's permission bits. Returns 0, -EINVAL (err: "token: FILE: what"), -ENOMEM, or
 * the -errno of reading it (err filled too). */
int gw_token_load(const char *path, unsigned char digest[GW_TOKEN_DIGEST_LEN], mode_t *mode,
                  struct gw_error *err);

#endif
