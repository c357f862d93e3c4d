/* Dispatch and receipt: golden values, loads by size, only online shards, capacity, and the
 * canonical fingerprint. */
#include <errno.h>
#include <stdlib.h>

#include "batch.h"
#include "check.h"
#include "dispatch.h"
#include "fileio.h"
#include "receipt.h"
#include "topology.h"

static const char *root_dir;

static char *path_of(const char *rel)
{
    static char buf[4096];
    snprintf(buf, sizeof(buf), "%s/%s", root_dir, rel);
    return buf;
}

static struct gw_topology load_topology(const char *shards_json, const char *policy)
{
    char conf[256];
    snprintf(conf, sizeof(conf),
             "DISPATCH_HASH_RING=ketama\nDISPATCH_VNODES=160\nDISPATCH_RING_HASH=sha1\n"
             "DISPATCH_CAPACITY_POLICY=%s\n",
             policy);
    struct gw_contract c;
    struct gw_membership m;
    struct gw_topology t;
    struct gw_error err;
    if (gw_contract_parse(conf, strlen(conf), "test.env", &c, &err) ||
        gw_membership_parse(shards_json, strlen(shards_json), "test.json", &m, &err) ||
        gw_topology_build(&c, &m, &t, &err)) {
        fprintf(stderr, "setup: %s\n", err.msg);
        exit(2);
    }
    return t;
}

static char *example_shards(void)
{
    char *text;
    size_t len;
    if (gw_file_read(path_of("input/shards.json"), &text, &len) != 0)
        exit(2);
    return text;
}

static void parse(const char *json, struct gw_batch *b)
{
    struct gw_error err;
    if (gw_batch_parse(json, strlen(json), GW_MAX_CHANGES_DEFAULT, b, &err) != 0) {
        fprintf(stderr, "parse: %s\n", err.msg);
        exit(2);
    }
}

static size_t member(const struct gw_topology *t, const char *id)
{
    for (size_t i = 0; i < t->members.count; i++)
        if (strcmp(t->members.shards[i].id, id) == 0)
            return i;
    return SIZE_MAX;
}

static void test_golden_receipt(void)
{
    char *shards = example_shards(), *batch, *golden;
    size_t len, glen;
    gw_file_read(path_of("input/changes.json"), &batch, &len);
    gw_file_read(path_of("tests/golden/sample-0001.receipt.v2.json"), &golden, &glen);
    struct gw_topology t = load_topology(shards, "report");
    struct gw_batch b;
    struct gw_dispatch d;
    struct gw_error err;
    parse(batch, &b);
    CHECK_EQ_U64(gw_dispatch_run(&t, &b, &d, &err), 0);
    /* Loads are sums of sizes (8, 6, 10), not counts of changes (2, 2, 4). */
    CHECK_EQ_U64(d.tally[member(&t, "shard-a")].load, 8);
    CHECK_EQ_U64(d.tally[member(&t, "shard-a")].received, 2);
    CHECK_EQ_U64(d.tally[member(&t, "shard-b")].load, 6);
    CHECK_EQ_U64(d.tally[member(&t, "shard-c")].load, 10);
    CHECK_EQ_U64(d.tally[member(&t, "shard-c")].received, 4);
    CHECK_EQ_U64(d.tally[member(&t, "shard-d")].received, 0);
    CHECK_EQ_U64(d.tally[member(&t, "shard-e")].received, 0);
    CHECK_EQ_U64(t.capacity, 60);
    CHECK_EQ_U64(d.dispatched, 8);
    CHECK_EQ_U64(d.ok, 1);
    CHECK_EQ_U64(ring_points_total(t.ring), 480);
    struct gw_buf out;
    gw_buf_init(&out);
    gw_receipt_write(&out, &t, &b, &d);
    gw_buf_puts(&out, "\n");
    CHECK_EQ_U64(out.len, glen);
    CHECK_TRUE(out.len == glen && memcmp(out.data, golden, glen) == 0);
    gw_buf_free(&out);
    gw_dispatch_free(&d);
    gw_batch_free(&b);
    gw_topology_free(&t);
    free(shards);
    free(batch);
    free(golden);
}

/* If shard-d and shard-e were (rightly, here) online, ch-001 moves to shard-d
 * (docs/contract.md §6). */
static void test_more_online_moves_placement(void)
{
    const char *all_online =
        "{\"shards\":[{\"id\":\"shard-a\",\"state\":\"online\",\"capacity\":20},"
        "{\"id\":\"shard-b\",\"state\":\"online\",\"capacity\":20},"
        "{\"id\":\"shard-c\",\"state\":\"online\",\"capacity\":20},"
        "{\"id\":\"shard-d\",\"state\":\"online\",\"capacity\":20},"
        "{\"id\":\"shard-e\",\"state\":\"online\",\"capacity\":20}]}";
    struct gw_topology t = load_topology(all_online, "report");
    struct ring_placement p;
    ring_lookup(t.ring, "order:1001", 10, &p);
    CHECK_EQ_STR(ring_shard_id(t.ring, p.shard), "shard-d");
    CHECK_EQ_U64(ring_points_total(t.ring), 800);
    gw_topology_free(&t);
}

/* Draining and offline shards never receive a change, whatever the keys. */
static void test_only_online_receive(void)
{
    const char *mixed = "{\"shards\":[{\"id\":\"a\",\"state\":\"offline\",\"capacity\":0},"
                        "{\"id\":\"b\",\"state\":\"online\",\"capacity\":0,\"weight\":2},"
                        "{\"id\":\"c\",\"state\":\"draining\",\"capacity\":0},"
                        "{\"id\":\"d\",\"state\":\"online\",\"capacity\":0}]}";
    struct gw_topology t = load_topology(mixed, "report");
    CHECK_EQ_U64(ring_points_total(t.ring), 160 * 3);
    CHECK_EQ_U64(ring_shard_count(t.ring), 2);
    struct gw_buf json;
    gw_buf_init(&json);
    gw_buf_puts(&json, "{\"batch_id\":\"mix\",\"changes\":[");
    for (int i = 0; i < 5000; i++) {
        char c[80];
        snprintf(c, sizeof(c), "%s{\"id\":\"c%d\",\"key\":\"k%d\",\"size\":0}", i ? "," : "", i,
                 i * 7919);
        gw_buf_puts(&json, c);
    }
    gw_buf_puts(&json, "]}");
    gw_buf_append(&json, "", 1);
    struct gw_batch b;
    struct gw_dispatch d;
    struct gw_error err;
    parse(json.data, &b);
    gw_dispatch_run(&t, &b, &d, &err);
    CHECK_EQ_U64(d.tally[member(&t, "a")].received, 0);
    CHECK_EQ_U64(d.tally[member(&t, "c")].received, 0);
    CHECK_EQ_U64(d.tally[member(&t, "b")].received + d.tally[member(&t, "d")].received, 5000);
    /* weight 2 draws about twice the keys of weight 1 */
    CHECK_TRUE(d.tally[member(&t, "b")].received > d.tally[member(&t, "d")].received * 3 / 2);
    CHECK_EQ_U64(d.dispatched, 5000);
    CHECK_EQ_U64(d.ok, 1); /* capacity 0 and size 0: not over */
    gw_dispatch_free(&d);
    gw_batch_free(&b);
    gw_buf_free(&json);
    gw_topology_free(&t);
}

static void test_over_capacity(void)
{
    char *shards = example_shards();
    struct gw_topology t = load_topology(shards, "report");
    struct gw_batch b;
    struct gw_dispatch d;
    struct gw_error err;
    /* order:1001 lands on shard-b (capacity 20) */
    parse("{\"batch_id\":\"big\",\"changes\":[{\"id\":\"1\",\"key\":\"order:1001\",\"size\":21}]}",
          &b);
    gw_dispatch_run(&t, &b, &d, &err);
    CHECK_EQ_U64(d.ok, 0);
    CHECK_EQ_U64(d.over_capacity_shards, 1);
    CHECK_EQ_U64(gw_dispatch_over_capacity(&t, &d, member(&t, "shard-b")), 1);
    CHECK_EQ_U64(gw_dispatch_over_capacity(&t, &d, member(&t, "shard-a")), 0);
    gw_dispatch_free(&d);
    gw_batch_free(&b);
    /* exactly at capacity is not over */
    parse("{\"batch_id\":\"full\",\"changes\":[{\"id\":\"1\",\"key\":\"order:1001\",\"size\":20}]}",
          &b);
    gw_dispatch_run(&t, &b, &d, &err);
    CHECK_EQ_U64(d.ok, 1);
    CHECK_EQ_U64(d.over_capacity_shards, 0);
    gw_dispatch_free(&d);
    gw_batch_free(&b);
    gw_topology_free(&t);
    free(shards);
}

static void test_empty_ring(void)
{
    struct gw_topology t = load_topology(
        "{\"shards\":[{\"id\":\"a\",\"state\":\"draining\",\"capacity\":1}]}", "report");
    struct gw_batch b;
    struct gw_dispatch d;
    struct gw_error err;
    parse("{\"batch_id\":\"x\",\"changes\":[{\"id\":\"1\",\"key\":\"k\",\"size\":1}]}", &b);
    CHECK_EQ_U64(gw_dispatch_run(&t, &b, &d, &err), (uint64_t)-ENOENT);
    CHECK_EQ_STR(err.msg, "no online shard: the ring is empty and cannot place changes");
    gw_batch_free(&b);
    gw_topology_free(&t);
}

static void fingerprint_hex(const char *json, char *hex)
{
    struct gw_batch b;
    parse(json, &b);
    for (int i = 0; i < GW_FINGERPRINT_LEN; i++)
        snprintf(hex + 2 * i, 3, "%02x", b.fingerprint[i]);
    gw_batch_free(&b);
}

/* Whitespace and key order do not change the fingerprint; content does. */
static void test_fingerprint(void)
{
    char *batch, a[65], b[65], c[65];
    size_t len;
    gw_file_read(path_of("input/changes.json"), &batch, &len);
    fingerprint_hex(batch, a);
    CHECK_EQ_STR(a, "290927320e6368bf8509231d62353c0c1508afeba4624b60c26c69dc49e4c264");
    fingerprint_hex("{\"changes\":[{\"size\":1,\"key\":\"k\",\"id\":\"x\"}],\"batch_id\":\"f\"}",
                    b);
    fingerprint_hex("{ \"batch_id\" : \"f\",\n \"changes\" : [ {\"id\":\"x\", \"key\":\"k\", "
                    "\"size\":1} ] }",
                    c);
    CHECK_EQ_STR(b, c);
    fingerprint_hex("{\"batch_id\":\"f\",\"changes\":[{\"id\":\"x\",\"key\":\"k\",\"size\":2}]}",
                    c);
    CHECK_TRUE(strcmp(b, c) != 0);
    free(batch);
}

/* docs/contract.md §7: the worked example's epoch id, and every input of it changes it. */
static void test_epoch_id(void)
{
    char *shards = example_shards();
    struct gw_topology t = load_topology(shards, "report");
    CHECK_EQ_STR(t.epoch, "f60a5fb19effc4cfa95aed0af45997f72905f6ae");
    char before[GW_EPOCH_HEX_LEN + 1];
    memcpy(before, t.epoch, sizeof(before));
    struct gw_error err;
    t.members.shards[3].capacity = 21; /* shard-d: offline, not in the ring */
    CHECK_EQ_U64(gw_epoch_id(&t.contract, &t.members, t.epoch, &err), 0);
    CHECK_EQ_U64(strcmp(t.epoch, before) != 0, 1);
    t.members.shards[3].capacity = 20;
    t.members.shards[4].state = GW_STATE_OFFLINE; /* shard-e: draining -> offline */
    CHECK_EQ_U64(gw_epoch_id(&t.contract, &t.members, t.epoch, &err), 0);
    CHECK_EQ_U64(strcmp(t.epoch, before) != 0, 1);
    t.members.shards[4].state = GW_STATE_DRAINING;
    t.contract.policy = GW_POLICY_REJECT;
    CHECK_EQ_U64(gw_epoch_id(&t.contract, &t.members, t.epoch, &err), 0);
    CHECK_EQ_U64(strcmp(t.epoch, before) != 0, 1);
    t.contract.policy = GW_POLICY_REPORT;
    CHECK_EQ_U64(gw_epoch_id(&t.contract, &t.members, t.epoch, &err), 0);
    CHECK_EQ_STR(t.epoch, before);
    gw_topology_free(&t);
    free(shards);
}

int main(int argc, char **argv)
{
    root_dir = argc > 1 ? argv[1] : ".";
    test_golden_receipt();
    test_more_online_moves_placement();
    test_only_online_receive();
    test_over_capacity();
    test_empty_ring();
    test_fingerprint();
    test_epoch_id();
    return CHECK_DONE();
}
