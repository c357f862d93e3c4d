/* Calls every function of libshardgate with each of its pointer arguments NULL in turn, and
 * prints each outcome: `<call>: <status> <message>` (test_libshardgate.py compares them). A
 * crash ends the program early: the test sees the lines missing. */
#include <stdio.h>
#include <string.h>

#include <shardgate.h>

static const char contract[] =
    "DISPATCH_HASH_RING=ketama\nDISPATCH_VNODES=4\nDISPATCH_RING_HASH=sha1\n"
    "DISPATCH_CAPACITY_POLICY=report\n";
static const char shards[] = "{\"shards\":[{\"id\":\"a\",\"state\":\"online\",\"capacity\":9}]}";
static const char batch[] =
    "{\"batch_id\":\"b\",\"changes\":[{\"id\":\"c\",\"key\":\"k\",\"size\":1}]}";

static void said(const char *call, shardgate_status s, const shardgate_error *e)
{
    printf("%s: %d %s\n", call, (int)s, e ? e->message : "");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    shardgate_error e;
    shardgate_topology *t = NULL;
    char *out = NULL;
    size_t len = 0;
    shardgate_placement p;
    if (argc != 3)
        return 64;
    said("load(NULL, shards)", shardgate_topology_load(NULL, argv[2], &t, &e), &e);
    said("load(contract, NULL)", shardgate_topology_load(argv[1], NULL, &t, &e), &e);
    said("load(out NULL)", shardgate_topology_load(argv[1], argv[2], NULL, &e), &e);
    said("parse(NULL, shards)", shardgate_topology_parse(NULL, 0, shards, strlen(shards), &t, &e),
         &e);
    said("parse(contract, NULL)",
         shardgate_topology_parse(contract, strlen(contract), NULL, 0, &t, &e), &e);
    said("parse(out NULL)",
         shardgate_topology_parse(contract, strlen(contract), shards, strlen(shards), NULL, &e),
         &e);
    said("parse(err NULL)", shardgate_topology_parse(contract, strlen(contract), NULL, 0, &t, NULL),
         NULL);
    if (shardgate_topology_parse(contract, strlen(contract), shards, strlen(shards), &t, &e) !=
        SHARDGATE_OK)
        return 1;
    printf("ring_id(NULL): %s\nepoch_id(NULL): %s\n", shardgate_ring_id(NULL) ? "?" : "NULL",
           shardgate_epoch_id(NULL) ? "?" : "NULL");
    said("lookup(t NULL)", shardgate_lookup(NULL, "k", 1, &p), NULL);
    said("lookup(key NULL, 1)", shardgate_lookup(t, NULL, 1, &p), NULL);
    said("lookup(key NULL, 0)", shardgate_lookup(t, NULL, 0, &p), NULL);
    said("lookup(out NULL)", shardgate_lookup(t, "k", 1, NULL), NULL);
    said("place(t NULL)", shardgate_place(NULL, batch, strlen(batch), &out, &len, &e), &e);
    said("place(batch NULL)", shardgate_place(t, NULL, 0, &out, &len, &e), &e);
    said("place(receipt NULL)", shardgate_place(t, batch, strlen(batch), NULL, &len, &e), &e);
    said("place(receipt_len NULL)", shardgate_place(t, batch, strlen(batch), &out, NULL, &e), &e);
    said("plan(from NULL)", shardgate_plan(NULL, t, &out, &len, &e), &e);
    said("plan(to NULL)", shardgate_plan(t, NULL, &out, &len, &e), &e);
    said("plan(plan NULL)", shardgate_plan(t, t, NULL, &len, &e), &e);
    said("plan(plan_len NULL)", shardgate_plan(t, t, &out, NULL, &e), &e);
    said("moves(from NULL)", shardgate_moves(NULL, t, &out, &len, &e), &e);
    said("moves(moves_len NULL)", shardgate_moves(t, t, &out, NULL, &e), &e);
    shardgate_topology_free(NULL);
    shardgate_free(NULL);
    shardgate_topology_free(t);
    printf("done\n");
    return 0;
}
