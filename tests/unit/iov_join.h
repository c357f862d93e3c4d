/* The bytes of `n` iovecs put together (malloc'd; *len their count), or NULL: how the fault
 * tables of the tests (faulty_io.h, the simulator's disk) take a writev as one write. */
#ifndef SHARDGATE_TEST_IOV_JOIN_H
#define SHARDGATE_TEST_IOV_JOIN_H

#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

static inline char *iov_join(const struct iovec *iov, int n, size_t *len)
{
    *len = 0;
    for (int i = 0; i < n; i++)
        *len += iov[i].iov_len;
    char *all = malloc(*len ? *len : 1);
    for (size_t i = 0, at = 0; all && i < (size_t)n; at += iov[i].iov_len, i++)
        memcpy(all + at, iov[i].iov_base, iov[i].iov_len);
    return all;
}

#endif
