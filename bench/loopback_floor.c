/* The transport floor under the feed's POST-drop figure (docs/performance.md §11.3): what moving
 * the feed's bytes to its consumers costs on this machine with no gateway work at all. PAIRS
 * consumer processes each ask for a page over a kept-alive loopback connection and count the
 * assignment lines in it, as bench/feed_reader does (bench/feed_items.h); one sender thread per
 * consumer answers each ask, on a fixed schedule of PAGES_PER_S, with a page of BYTES_PER_S /
 * PAGES_PER_S bytes of assignment lines rendered once at start. The sender does nothing a gateway
 * could do less of: no journal read, no rendering, no HTTP. feed_bench.py runs it at the byte and
 * page rates the real consumers received in the active phase before it, so its POST drop is a lower
 * bound of what any feed server on these cores would cost at that rate.
 *
 * usage: loopback_floor PAIRS BYTES_PER_S PAGES_PER_S SECONDS
 * prints: {"bytes":B,"pages":P,"page_bytes":L,"consumers_ok":K,"sender_cpu_s":S,
 *          "consumers_cpu_s":C} (K: consumers that counted every page's items right) */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "feed_items.h"

#define ASK "GET /next HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"

struct sender {
    int listen_fd;
    const char *page;
    size_t page_len;
    double interval, seconds;
    uint64_t bytes, pages;
};

static void sleep_until(double t)
{
    double d = t - feed_now_s();
    if (d <= 0)
        return;
    struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
    nanosleep(&ts, NULL);
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Assignment lines shaped like the feed's NDJSON (docs/api.md §17), about `len` bytes; their
 * number in *items. */
static char *render_page(size_t len, size_t *out_len, uint64_t *items)
{
    char *page = malloc(len + 256);
    size_t at = 0;
    *items = 0;
    for (unsigned i = 0; page && at < len; i++, ++*items)
        at += (size_t)snprintf(page + at, 256,
                               "{\"type\":\"assignment\",\"seq\":%u,\"batch_id\":\"floor-%u\","
                               "\"epoch\":\"e1\",\"id\":\"c%u\",\"key\":\"k:%u\",\"size\":%u}\n",
                               1000000 + i / 100, i / 100, i % 100, i, 1 + i % 9);
    *out_len = at;
    return page;
}

/* One consumer's connection: each ask is answered by the next page at its scheduled time. */
static void *serve_one(void *arg)
{
    struct sender *s = arg;
    int fd = accept(s->listen_fd, NULL, NULL);
    char ask[256];
    double start = feed_now_s(), next = start;
    while (fd >= 0 && feed_now_s() - start < s->seconds) {
        if (recv(fd, ask, sizeof(ask), 0) <= 0)
            break;
        sleep_until(next);
        next += s->interval;
        if (send_all(fd, s->page, s->page_len) != 0)
            break;
        s->bytes += s->page_len;
        s->pages++;
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

/* Reads exactly n bytes; -1 when the connection ends first. */
static int recv_all(int fd, char *buf, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = recv(fd, buf + got, n - got, 0);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

/* A consumer process: asks, reads one page, counts its items, until the sender closes. Exits 0
 * when it got pages and every one held `expected` items. */
static void consume(int port, size_t page_len, uint64_t expected)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    char *buf = malloc(page_len);
    if (fd < 0 || !buf || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
        _exit(2);
    uint64_t items = 0, pages = 0;
    while (send_all(fd, ASK, strlen(ASK)) == 0 && recv_all(fd, buf, page_len) == 0) {
        pages++;
        items += feed_count_items(buf, page_len);
    }
    _exit(pages && items == pages * expected ? 0 : 1);
}

static double cpu_of(const struct rusage *ru)
{
    return (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) +
           (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e6;
}

static int listen_loopback(int *port)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 64) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0)
        return -1;
    *port = ntohs(a.sin_port);
    return fd;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: loopback_floor PAIRS BYTES_PER_S PAGES_PER_S SECONDS\n");
        return 64;
    }
    int pairs = atoi(argv[1]), port = 0;
    double rate = atof(argv[2]), pages_per_s = atof(argv[3]), seconds = atof(argv[4]);
    if (pairs < 1 || pairs > 64 || rate < 1 || pages_per_s < 1 || seconds <= 0) {
        fprintf(stderr, "loopback_floor: PAIRS 1..64, rates >= 1, SECONDS > 0\n");
        return 64;
    }
    size_t page_len;
    uint64_t items;
    char *page = render_page((size_t)(rate / pages_per_s), &page_len, &items);
    int lfd = listen_loopback(&port);
    if (!page || lfd < 0) {
        perror("loopback_floor");
        return 2;
    }
    for (int i = 0; i < pairs; i++)
        if (fork() == 0)
            consume(port, page_len, items);
    struct sender s[64];
    pthread_t t[64];
    for (int i = 0; i < pairs; i++) {
        s[i] = (struct sender){lfd, page, page_len, 1.0 / pages_per_s, seconds, 0, 0};
        pthread_create(&t[i], NULL, serve_one, &s[i]);
    }
    uint64_t bytes = 0, pages = 0;
    for (int i = 0; i < pairs; i++) {
        pthread_join(t[i], NULL);
        bytes += s[i].bytes;
        pages += s[i].pages;
    }
    int status, ok = 0;
    while (wait(&status) > 0)
        ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    printf("{\"bytes\":%llu,\"pages\":%llu,\"page_bytes\":%zu,\"consumers_ok\":%d,"
           "\"sender_cpu_s\":%.3f,\"consumers_cpu_s\":%.3f}\n",
           (unsigned long long)bytes, (unsigned long long)pages, page_len, ok, cpu_of(&self),
           cpu_of(&kids));
    free(page);
    return 0;
}
