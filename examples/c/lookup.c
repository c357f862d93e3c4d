/* Where keys land, in your own process, with libshardgate (docs/tools.md §13):
 *   cc lookup.c $(pkg-config --cflags --libs shardgate) -o lookup
 *   ./lookup conf/dispatch.env input/shards.json user:42 order:1001
 * prints one line a key: the key, its shard, its hash, the ring point and the vnode. */
#include <shardgate.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: lookup CONTRACT SHARDS KEY...\n");
        return 64;
    }
    shardgate_topology *t;
    shardgate_error err;
    if (shardgate_topology_load(argv[1], argv[2], &t, &err) != SHARDGATE_OK) {
        fprintf(stderr, "lookup: %s\n", err.message);
        return 3;
    }
    printf("epoch %s ring %s\n", shardgate_epoch_id(t), shardgate_ring_id(t));
    int rc = 0;
    for (int i = 3; i < argc; i++) {
        shardgate_placement p;
        if (shardgate_lookup(t, argv[i], strlen(argv[i]), &p) != SHARDGATE_OK) {
            fprintf(stderr, "lookup: no online shard\n");
            rc = 2;
            break;
        }
        printf("%s %.*s hash=%u point=%u vnode=%u %s\n", argv[i], (int)p.shard_len, p.shard, p.hash,
               p.point, p.vnode, p.wrapped ? "wrap" : "ring");
    }
    shardgate_topology_free(t);
    return rc;
}
