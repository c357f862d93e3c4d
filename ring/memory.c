/* libring's big arrays: huge-page memory, and the spares a freed ring leaves for the next build
 * (docs/decisions.md §6). */
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE */
#include "ring_internal.h"

#include <pthread.h>
#include <stdlib.h>

#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)

/* A reload builds a ring of about the size of the one it replaces, which is freed soon after
 * (its last request done). Fresh memory costs the kernel a page clear per page on first touch,
 * more than the incremental build's merge itself at 10,000 x 160, so the big arrays of a freed
 * ring are kept (at most SPARES, no more than a ring's worth) and handed to the next build. */
#define SPARES 3

static struct {
    pthread_mutex_t lock;
    void *p[SPARES];
    size_t bytes[SPARES]; /* rounded to HUGE_PAGE */
} spares = {PTHREAD_MUTEX_INITIALIZER, {0}, {0}};

static size_t rounded(size_t bytes)
{
    return (bytes + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
}

/* A spare of `size` bytes up to a quarter more, or NULL. */
static void *take_spare(size_t size)
{
    void *p = NULL;
    pthread_mutex_lock(&spares.lock);
    for (int i = 0; i < SPARES && !p; i++) {
        if (spares.p[i] && spares.bytes[i] >= size && spares.bytes[i] - size <= size / 4) {
            p = spares.p[i];
            spares.p[i] = NULL;
        }
    }
    pthread_mutex_unlock(&spares.lock);
    return p;
}

/* Large arrays (the points and buckets of big rings) go on 2 MiB-aligned memory marked for
 * transparent huge pages: a lookup on a 10,000-shard ring touches two random lines in 20 MB,
 * and with 4 KiB pages each touch also misses the TLB. The hint is best effort. */
void *ring__big_alloc(size_t bytes)
{
    if (bytes < HUGE_PAGE)
        return malloc(bytes ? bytes : 1);
    void *p = take_spare(rounded(bytes));
    if (p)
        return p;
    if (posix_memalign(&p, HUGE_PAGE, rounded(bytes)) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, rounded(bytes), MADV_HUGEPAGE);
#endif
    return p;
}

void ring__big_free(void *p, size_t bytes)
{
    if (!p || bytes < HUGE_PAGE) {
        free(p);
        return;
    }
    pthread_mutex_lock(&spares.lock);
    for (int i = 0; i < SPARES && p; i++) {
        if (!spares.p[i]) {
            spares.p[i] = p;
            spares.bytes[i] = rounded(bytes);
            p = NULL;
        }
    }
    pthread_mutex_unlock(&spares.lock);
    free(p); /* no room: the spares are full */
}
