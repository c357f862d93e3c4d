/* A long receipt's record read from its segment file in pieces (feed_record.h). */
#include "feed_record.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

unsigned long gw_feed_long_crc_start(void)
{
    return crc32(0L, Z_NULL, 0);
}

int gw_feed_long_keep(struct gw_feed_long *kept, const struct gw_feed_long *l)
{
    int fd = fcntl(l->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    *kept = *l;
    kept->fd = fd;
    return 0;
}

void gw_feed_long_release(struct gw_feed_long *l)
{
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
}

long gw_feed_long_read(const struct gw_feed_long *l, uint64_t at, char *buf, size_t n,
                       unsigned long *crc)
{
    int fd = l->fd;
    uint64_t len = gw_feed_long_len(l);
    if (at >= len || n == 0)
        return 0;
    if (n > len - at)
        n = (size_t)(len - at);
    if (n > (1u << 30))
        n = 1u << 30; /* zlib takes a uInt length */
    size_t from_file = at >= l->bytes ? 0 : (size_t)(n < l->bytes - at ? n : l->bytes - at);
    size_t got = 0;
    while (got < from_file) {
        ssize_t r = pread(fd, buf + got, from_file - got, (off_t)(l->offset + at + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            return -EIO; /* the segment is shorter than when its line was checked */
        got += (size_t)r;
    }
    *crc = crc32(*crc, (const Bytef *)buf, (uInt)from_file);
    if (from_file < n)
        buf[from_file] = '}'; /* the closing brace of a checked line's record */
    if (at + n == len && *crc != l->crc)
        return -EBADMSG;
    return (long)n;
}
