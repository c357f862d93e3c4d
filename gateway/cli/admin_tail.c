/* `shardgate admin tail` (docs/tools.md §1.2): a shard's assignments from a cursor on, followed
 * by long-polls of GET /v1/shards/{id}/assignments (docs/api.md §18) until interrupted. */
#include "admin.h"

#include <stdio.h>
#include <string.h>

#include "cli.h"

#define WAIT_MS 30000

/* A string of the feed as it may reach a terminal: every byte of a key or an id is data
 * (docs/contract.md §4), so a control character — C0, DEL, or C1 (U+0080..U+009F, which some
 * terminals obey too) — and the backslash are written as escapes: no key can move the cursor,
 * retitle the window or start a line of its own. NUL included: the length is jansson's. */
static void print_text(const char *name, const json_t *s)
{
    const unsigned char *p = (const unsigned char *)json_string_value(s);
    size_t len = json_string_length(s);
    printf("%s=", name);
    for (size_t i = 0; p && i < len; i++) {
        if (p[i] == 0xc2 && i + 1 < len && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f)
            printf("\\u%04x", p[++i]);
        else if (p[i] < 0x20 || p[i] == 0x7f)
            printf("\\x%02x", p[i]);
        else if (p[i] == '\\')
            fputs("\\\\", stdout);
        else
            putchar(p[i]);
    }
}

/* One feed item as people read it. */
static void print_item(json_t *item)
{
    const char *type = json_string_value(json_object_get(item, "type"));
    if (type && strcmp(type, "assignment") == 0) {
        printf("seq=%lld ", json_integer_value(json_object_get(item, "seq")));
        print_text("batch", json_object_get(item, "batch_id"));
        print_text(" id", json_object_get(item, "id"));
        print_text(" key", json_object_get(item, "key"));
        printf(" size=%lld\n", json_integer_value(json_object_get(item, "size")));
    } else if (type && strcmp(type, "epoch") == 0)
        printf("epoch=%s epoch_seq=%lld source=%s\n",
               json_string_value(json_object_get(item, "epoch")),
               json_integer_value(json_object_get(item, "epoch_seq")),
               json_string_value(json_object_get(item, "source")));
}

/* Each line of an NDJSON page: items printed, the bookmark's last_seq into *after. */
static int follow_page(const struct gw_admin_answer *a, int json, uint64_t *after)
{
    const char *p = a->body.data ? a->body.data : "", *end = p + a->body.len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        json_t *item = json_loadb(p, len, JSON_ALLOW_NUL, NULL); /* a key may hold \u0000 */
        const char *type = json_string_value(json_object_get(item, "type"));
        if (!item || !type) {
            json_decref(item);
            fprintf(stderr, "shardgate: admin tail: the feed holds a line that is not an item\n");
            return GW_EXIT_NOT_OK;
        }
        if (strcmp(type, "bookmark") == 0)
            *after = (uint64_t)json_integer_value(json_object_get(item, "last_seq"));
        else if (json)
            fwrite(p, 1, len + 1, stdout);
        else
            print_item(item);
        json_decref(item);
        p += len + 1;
    }
    return fflush(stdout) == 0 ? GW_EXIT_OK : GW_EXIT_INTERNAL;
}

int gw_admin_tail(struct gw_admin_client *c, const struct gw_admin_args *args)
{
    uint64_t after = args->after;
    int rc = GW_EXIT_OK;
    c->accept = "application/x-ndjson";
    c->timeout_s = WAIT_MS / 1000 + 30; /* a long-poll, then the answer */
    while (rc == GW_EXIT_OK) {
        char path[400];
        struct gw_admin_answer a;
        snprintf(path, sizeof(path), "/v1/shards/%.200s/assignments?after=%llu&wait_ms=%d",
                 args->shard, (unsigned long long)after, WAIT_MS);
        rc = gw_admin_call(c, "tail", "GET", path, c->token, NULL, NULL, &a);
        if (rc == GW_EXIT_OK)
            rc = follow_page(&a, args->json, &after);
        gw_admin_answer_free(&a);
    }
    return rc;
}
