/* The membership's fast path (gateway/core/membership_read.c, docs/decisions.md §6) against the
 * strict jansson path: for every shards document of tests/cases and input/, and for documents
 * written to sit on the edges of the two readers (escapes, number forms, duplicates, limits),
 * gw_membership_parse gives exactly what gw_membership_parse_tree gives: the code, the message,
 * the JSON path, and every shard field. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "fileio.h"
#include "membership.h"

static void compare(const char *label, const char *text, size_t len)
{
    struct gw_membership fast, tree;
    struct gw_error ef = {0}, et = {0};
    int rf = gw_membership_parse(text, len, "F", &fast, &ef);
    int rt = gw_membership_parse_tree(text, len, "F", &tree, &et);
    CHECK_REPORT(rf == rt, "%s: code %d != %d", label, rf, rt);
    CHECK_REPORT(strcmp(ef.msg, et.msg) == 0, "%s: \"%s\" != \"%s\"", label, ef.msg, et.msg);
    CHECK_REPORT(strcmp(ef.path, et.path) == 0, "%s: path %s != %s", label, ef.path, et.path);
    CHECK_REPORT(fast.count == tree.count, "%s: %zu != %zu shards", label, fast.count, tree.count);
    for (size_t i = 0; rf == 0 && rt == 0 && i < fast.count && i < tree.count; i++) {
        const struct gw_shard *a = &fast.shards[i], *b = &tree.shards[i];
        CHECK_REPORT(a->id_len == b->id_len && memcmp(a->id, b->id, a->id_len + 1) == 0 &&
                         a->state == b->state && a->capacity == b->capacity &&
                         a->weight == b->weight && a->file_index == b->file_index &&
                         a->online_weight == b->online_weight,
                     "%s: shard %zu differs (%s, %s)", label, i, a->id, b->id);
    }
    gw_membership_free(&fast);
    gw_membership_free(&tree);
}

static void compare_str(const char *text)
{
    compare(text, text, strlen(text));
}

/* Every tests/cases/<suite>/<case>/shards.json. */
static int compare_case_files(const char *root)
{
    char dir[2048], path[2400];
    int files = 0;
    static const char *const suites[] = {"shards", "valid", "contract", "batch"};
    for (size_t s = 0; s < sizeof(suites) / sizeof(suites[0]); s++) {
        snprintf(dir, sizeof(dir), "%s/tests/cases/%s", root, suites[s]);
        DIR *d = opendir(dir);
        for (struct dirent *e; d && (e = readdir(d));) {
            char *text;
            size_t len;
            snprintf(path, sizeof(path), "%s/%s/shards.json", dir, e->d_name);
            if (e->d_name[0] == '.' || gw_file_read(path, &text, &len) != 0)
                continue;
            compare(path, text, len);
            free(text);
            files++;
        }
        if (d)
            closedir(d);
    }
    return files;
}

static const char *const edges[] = {
    "{\"shards\":[]}",
    " \t\r\n{ \"shards\" : [ { \"weight\" : 2 , \"capacity\" : 5 , \"state\" : \"online\" , "
    "\"id\" : \"b\" } , {\"id\":\"a\",\"state\":\"draining\",\"capacity\":0}] } \n",
    "{\"shards\":[{\"\\u0069d\":\"a\",\"state\":\"online\",\"capacity\":1}]}",
    "{\"shards\":[{\"id\":\"\\u0041\",\"state\":\"online\",\"capacity\":1}]}",
    "{\"shards\":[{\"id\":\"a\\u0000\",\"state\":\"online\",\"capacity\":1}]}",
    "{\"shards\":[{\"id\":\"a\",\"state\":\"online\",\"capacity\":-0}]}",
    "{\"shards\":[{\"id\":\"a\",\"state\":\"online\",\"capacity\":1.0}]}",
    "{\"shards\":[{\"id\":\"a\",\"state\":\"online\",\"capacity\":1e2}]}",
    "{\"shards\":[{\"id\":\"a\",\"state\":\"online\",\"capacity\":01}]}",
    "{\"shards\":[{\"id\":\"a\",\"state\":\"online\",\"capacity\":99999999999999999999}]}",
    "{\"shards\":[{\"id\":\"a\",\"state\":\"online\",\"capacity\":9007199254740991}]}",
    "{\"shards\":[{\"id\":\"a\",\"state\":\"online\",\"capacity\":9007199254740992}]}",
    "{\"shards\":[{\"id\":\"a\",\"state\":\"online\",\"capacity\":9007199254740991},"
    "{\"id\":\"b\",\"state\":\"offline\",\"capacity\":1}]}",
    "{\"shards\":[{\"id\":\"a\",\"state\":\"online\",\"capacity\":1,\"weight\":1000}]}",
    "{\"shards\":[{\"id\":\"a\",\"state\":\"online\",\"capacity\":1,\"weight\":1001}]}",
    "{\"shards\":[{\"id\":\"a\",\"state\":\"online\",\"capacity\":1,\"weight\":null}]}",
    "{\"shards\":[{\"id\":\"a\",\"state\":\"online\",\"capacity\":1,\"id\":\"b\"}]}",
    "{\"shards\":[{\"id\":\"a\",\"state\":\"online\",\"capacity\":1}],\"shards\":[]}",
    "{\"shards\":[{\"id\":\"a\",\"state\":\"online\",\"capacity\":1}]} x",
    "{\"shards\":[{\"id\":\"a\",\"state\":\"online\",\"capacity\":1}]}{}",
    "\xef\xbb\xbf{\"shards\":[]}",
    "{\"shards\":[{\"id\":\"a\",\"state\":\"onlin\\u0065\",\"capacity\":1}]}",
    "{\"shards\":[{\"id\":\"a\",\"state\":\"online\\u0000\",\"capacity\":1}]}",
    "{\"shards\":[{\"id\":\"a\",\"state\":\"online\",\"capacity\":1,\"\":1}]}",
    "{\"shards\":[[]]}",
    "{\"shards\":{}}",
    "{\"shards\":[{\"id\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "\"state\":\"online\",\"capacity\":1}]}",
    "{\"shards\":[{\"id\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
    "\"state\":\"online\",\"capacity\":1}]}",
    "{\"shards\":[{\"id\":\"b\",\"state\":\"online\",\"capacity\":1},"
    "{\"id\":\"a\",\"state\":\"online\",\"capacity\":1},{\"id\":\"b\",\"state\":\"offline\","
    "\"capacity\":2}]}",
    "{\"shards\":[{\"id\":\"a\",\"state\":\"online\",\"capacity\":1}",
    "",
    "null",
    "[]",
};

/* A big document, then the same with one fault at each of a few places. */
static void compare_big(void)
{
    size_t cap = 10000 * 96, n = 0;
    char *doc = malloc(cap);
    n += (size_t)snprintf(doc + n, cap - n, "{\"shards\":[");
    for (int i = 0; i < 5000; i++)
        n += (size_t)snprintf(doc + n, cap - n,
                              "%s{\"id\":\"shard-%05d\",\"state\":\"%s\",\"capacity\":%d%s}",
                              i ? "," : "", (i * 7919) % 5000, i % 3 ? "online" : "draining",
                              i * 1000, i % 5 ? ",\"weight\":2" : "");
    n += (size_t)snprintf(doc + n, cap - n, "]}");
    compare("big", doc, n);
    char *dup = strstr(doc + n / 2, "shard-");
    memcpy(dup, "shard-00000", 11); /* a duplicate id far from its first place */
    compare("big with a duplicate", doc, n);
    free(doc);
}

int main(int argc, char **argv)
{
    const char *root = argc > 1 ? argv[1] : ".";
    CHECK_TRUE(compare_case_files(root) >= 20);
    char *text;
    size_t len;
    char path[4200];
    snprintf(path, sizeof(path), "%s/input/shards.json", root);
    CHECK_EQ_U64(gw_file_read(path, &text, &len), 0);
    compare(path, text, len);
    free(text);
    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
        compare_str(edges[i]);
    compare("NUL inside", "{\"shards\":[]}\0", 14);
    compare_big();
    return CHECK_DONE();
}
