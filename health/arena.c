/* Arena allocator behind jansson, so journal batches are freed by one reset. */
/* Without it, parsing a journal line spends a third of its time in malloc/free for the many
 * small objects of each placement. */
#include <stdint.h>
#include <stdlib.h>

#include <jansson.h>

#include "arena.h"

/* Every allocation carries a header saying where it came from, so one free function serves
 * both arena and ordinary memory. 16 bytes keep the payload aligned like malloc's. */
#define HC_HDR 16
#define HC_FROM_MALLOC 0x6d616c6cu
#define HC_FROM_ARENA 0x6172656eu
#define HC_BLOCK_MIN (4u << 20)

struct hc_arena_block {
    struct hc_arena_block *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

static _Thread_local struct hc_arena *hc_tls_arena;
static int hc_installed;

static void *hc_arena_take(struct hc_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    struct hc_arena_block *b = a->cur;
    while (b != NULL && b->size - b->used < n) {
        b = b->next;
        a->cur = b;
    }
    if (b == NULL) {
        size_t size = n > HC_BLOCK_MIN ? n : HC_BLOCK_MIN;
        b = malloc(sizeof *b + size);
        if (b == NULL)
            return NULL;
        b->size = size;
        b->used = 0;
        /* append, so a reset walks every block again in order */
        b->next = NULL;
        if (a->first == NULL) {
            a->first = b;
        } else {
            struct hc_arena_block *last = a->first;
            while (last->next != NULL)
                last = last->next;
            last->next = b;
        }
        a->cur = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    return p;
}

static void *hc_json_malloc(size_t n)
{
    if (n > SIZE_MAX - 2 * HC_HDR)
        return NULL;
    struct hc_arena *a = hc_tls_arena;
    unsigned char *base = a != NULL ? hc_arena_take(a, n + HC_HDR) : malloc(n + HC_HDR);
    if (base == NULL)
        return NULL;
    *(uint32_t *)base = a != NULL ? HC_FROM_ARENA : HC_FROM_MALLOC;
    return base + HC_HDR;
}

static void hc_json_free(void *p)
{
    if (p == NULL)
        return;
    unsigned char *base = (unsigned char *)p - HC_HDR;
    if (*(uint32_t *)base == HC_FROM_MALLOC)
        free(base);
}

void hc_arena_install(void)
{
#if defined(__SANITIZE_ADDRESS__)
    /* Under AddressSanitizer every jansson object stays an ordinary allocation, so a document
     * used after its batch was released is reported instead of silently reading reused memory. */
    return;
#endif
    json_set_alloc_funcs(hc_json_malloc, hc_json_free);
    hc_installed = 1;
}

int hc_arena_installed(void)
{
    return hc_installed;
}

void hc_arena_enter(struct hc_arena *a)
{
    hc_tls_arena = a;
}

void hc_arena_leave(void)
{
    hc_tls_arena = NULL;
}

void hc_arena_reset(struct hc_arena *a)
{
    for (struct hc_arena_block *b = a->first; b != NULL; b = b->next)
        b->used = 0;
    a->cur = a->first;
}

void hc_arena_free(struct hc_arena *a)
{
    struct hc_arena_block *b = a->first;
    while (b != NULL) {
        struct hc_arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->first = a->cur = NULL;
}
