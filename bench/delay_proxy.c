/* delay_proxy: a TCP proxy that holds every chunk DELAY_US microseconds in each direction
 * (bench/pg_scale.sh --rtt-ms, docs/performance.md §13.2): a network round trip between a
 * replica and PostgreSQL on a kernel without netem. Each direction of each connection is a
 * reader thread that stamps what it reads with its due time and a sender thread that sleeps
 * until then (clock_nanosleep on CLOCK_MONOTONIC, to the microsecond) and writes it: order kept,
 * and the proxy costs a read, a write and two wake-ups per chunk, not an interpreter's loop.
 *
 * usage: delay_proxy LISTEN_PORT TARGET_PORT DELAY_US   (127.0.0.1 on both sides)
 * Prints "listening PORT" once it accepts connections. */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 65536

struct chunk {
    struct chunk *next;
    struct timespec due;
    size_t len; /* 0: the end of the stream */
    char data[];
};

/* One direction: from -> to, its chunks queued between the two threads. */
struct direction {
    int from, to;
    long delay_us;
    pthread_mutex_t lock;
    pthread_cond_t ready;
    struct chunk *head, *tail;
};

static struct timespec due_after(long us)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_nsec += us * 1000;
    t.tv_sec += t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

static void push(struct direction *d, struct chunk *c)
{
    c->next = NULL;
    pthread_mutex_lock(&d->lock);
    if (d->tail)
        d->tail->next = c;
    else
        d->head = c;
    d->tail = c;
    pthread_cond_signal(&d->ready);
    pthread_mutex_unlock(&d->lock);
}

static struct chunk *pop(struct direction *d)
{
    pthread_mutex_lock(&d->lock);
    while (!d->head)
        pthread_cond_wait(&d->ready, &d->lock);
    struct chunk *c = d->head;
    d->head = c->next;
    if (!d->head)
        d->tail = NULL;
    pthread_mutex_unlock(&d->lock);
    return c;
}

static void *read_side(void *arg)
{
    struct direction *d = arg;
    for (;;) {
        struct chunk *c = malloc(sizeof(*c) + CHUNK);
        if (!c)
            abort();
        ssize_t n;
        while ((n = read(d->from, c->data, CHUNK)) < 0 && errno == EINTR)
            ;
        c->len = n > 0 ? (size_t)n : 0;
        c->due = due_after(d->delay_us);
        push(d, c);
        if (n <= 0)
            return NULL;
    }
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void *send_side(void *arg)
{
    struct direction *d = arg;
    int broken = 0;
    for (;;) {
        struct chunk *c = pop(d);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &c->due, NULL) == EINTR)
            ;
        size_t len = c->len;
        if (len && !broken)
            broken = write_all(d->to, c->data, len) != 0;
        free(c);
        if (!len) {
            shutdown(d->to, SHUT_WR);
            return NULL;
        }
    }
}

struct link {
    int client, server;
    long delay_us;
};

/* Both directions of one connection; closes both sockets when both ended. */
static void *run_link(void *arg)
{
    struct link *l = arg;
    struct direction dir[2] = {{.from = l->client, .to = l->server, .delay_us = l->delay_us},
                               {.from = l->server, .to = l->client, .delay_us = l->delay_us}};
    pthread_t th[4];
    for (int i = 0; i < 2; i++) {
        pthread_mutex_init(&dir[i].lock, NULL);
        pthread_cond_init(&dir[i].ready, NULL);
        if (pthread_create(&th[2 * i], NULL, read_side, &dir[i]) != 0 ||
            pthread_create(&th[2 * i + 1], NULL, send_side, &dir[i]) != 0)
            abort();
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    close(l->client);
    close(l->server);
    free(l);
    return NULL;
}

static int connect_to(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static void no_delay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: delay_proxy LISTEN_PORT TARGET_PORT DELAY_US\n");
        return 64;
    }
    int target = atoi(argv[2]);
    long delay_us = atol(argv[3]);
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof(a);
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(ls, 64) != 0 ||
        getsockname(ls, (struct sockaddr *)&a, &alen) != 0) {
        perror("delay_proxy: listen");
        return 1;
    }
    printf("listening %d\n", ntohs(a.sin_port));
    fflush(stdout);
    for (;;) {
        int client = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
        if (client < 0)
            continue;
        int server = connect_to(target);
        struct link *l = server < 0 ? NULL : malloc(sizeof(*l));
        pthread_t th;
        if (!l) {
            close(client);
            if (server >= 0)
                close(server);
            continue;
        }
        no_delay(client);
        no_delay(server);
        *l = (struct link){client, server, delay_us};
        if (pthread_create(&th, NULL, run_link, l) != 0)
            abort();
        pthread_detach(th);
    }
}
