/* One active feed consumer for bench/feed_bench.py (docs/performance.md §11.2): follows
 * GET /v1/shards/{shard}/assignments from a cursor over one kept-alive loopback connection,
 * counting the assignments it receives, for a number of seconds. Written in C so that the
 * POST-throughput figure measures the gateway serving the feed, not a Python client's parsing
 * on the same two cores (the Python consumer's figure is kept beside it).
 *
 * usage: feed_reader PORT SHARD AFTER SECONDS PAUSE_MS
 * prints: {"assignments":N,"requests":R,"bytes":B,"last_seq":S,"cpu_s":C} (B: body bytes) */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "feed_items.h"

#define BOOKMARK "{\"type\":\"bookmark\",\"last_seq\":"

static int connect_to(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        perror("feed_reader: connect");
        exit(2);
    }
    return fd;
}

/* Reads one answer into *buf (headers and body); returns the body's offset, its length in *n. */
static size_t read_answer(int fd, char **buf, size_t *cap, size_t *n)
{
    size_t len = 0, head = 0, body = 0;
    for (;;) {
        if (len == *cap) {
            *cap *= 2;
            *buf = realloc(*buf, *cap);
            if (!*buf)
                exit(2);
        }
        ssize_t got = recv(fd, *buf + len, *cap - len, 0);
        if (got <= 0) {
            fprintf(stderr, "feed_reader: connection closed\n");
            exit(2);
        }
        len += (size_t)got;
        if (!head) {
            char *end = memmem(*buf, len, "\r\n\r\n", 4);
            if (!end)
                continue;
            head = (size_t)(end - *buf) + 4;
            char *cl = memmem(*buf, head, "Content-Length: ", 16);
            if (!cl || strncmp(*buf, "HTTP/1.1 200", 12) != 0) {
                fprintf(stderr, "feed_reader: %.*s\n", (int)len, *buf);
                exit(2);
            }
            body = strtoull(cl + 16, NULL, 10);
        }
        if (len >= head + body) {
            *n = body;
            return head;
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: feed_reader PORT SHARD AFTER SECONDS PAUSE_MS\n");
        return 64;
    }
    int port = atoi(argv[1]), fd = connect_to(port);
    uint64_t after = strtoull(argv[3], NULL, 10), items = 0, requests = 0;
    uint64_t bytes = 0;
    double stop = feed_now_s() + atof(argv[4]);
    struct timespec pause = {0, atol(argv[5]) * 1000000L};
    size_t cap = 1 << 22, n;
    char *buf = malloc(cap), req[512];
    while (buf && feed_now_s() < stop) {
        int len = snprintf(req, sizeof(req),
                           "GET /v1/shards/%s/assignments?after=%llu&limit=100000&wait_ms=1000 "
                           "HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
                           argv[2], (unsigned long long)after);
        if (send(fd, req, (size_t)len, 0) != len)
            return 2;
        size_t at = read_answer(fd, &buf, &cap, &n);
        requests++;
        bytes += n;
        items += feed_count_items(buf + at, n);
        char *bm = memmem(buf + at, n, BOOKMARK, strlen(BOOKMARK));
        if (!bm)
            return 2;
        after = strtoull(bm + strlen(BOOKMARK), NULL, 10);
        if (pause.tv_nsec && n < (1u << 19))
            nanosleep(&pause, NULL); /* a small page: let more gather */
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"assignments\":%llu,\"requests\":%llu,\"bytes\":%llu,\"last_seq\":%llu,"
           "\"cpu_s\":%.3f}\n",
           (unsigned long long)items, (unsigned long long)requests, (unsigned long long)bytes,
           (unsigned long long)after,
           (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
               (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
    free(buf);
    close(fd);
    return 0;
}
