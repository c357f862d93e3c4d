/* Fuzz target: gw_membership_parse on arbitrary bytes, cross-checked against the health reader. */
#include <errno.h>

#include "../../health/membership.h"
#include "fuzz_common.h"
#include "membership.h"

/* A membership the gateway accepts must be one the health service accepts, shard for shard:
 * otherwise health could not verify a gateway that runs. */
static void check_health_agrees(const uint8_t *data, size_t size, const struct gw_membership *m)
{
    struct hc_membership hm;
    struct hc_err herr;
    const char *path = fuzz_scratch_file(".json", data, size);
    struct hc_contract hc = {.ring = HC_RING_KETAMA, .vnodes = 1}; /* R2: 1 is the least */
    int rc = hc_membership_load(path, &hc, &hm, &herr);
    remove(path);
    if (rc != 0)
        fprintf(stderr, "health refuses a membership the gateway accepts: %s\n", herr.msg);
    FUZZ_REQUIRE(rc == 0);
    FUZZ_REQUIRE(hm.n == m->count);
    for (size_t i = 0; i < m->count; i++) {
        const struct gw_shard *g = &m->shards[i];
        const struct hc_shard *h = &hm.shards[i];
        FUZZ_REQUIRE(g->id_len == h->id_len && memcmp(g->id, h->id, g->id_len) == 0);
        FUZZ_REQUIRE((int)g->state == (int)h->state);
        FUZZ_REQUIRE(g->capacity == (uint64_t)h->capacity);
        FUZZ_REQUIRE(g->weight == h->weight);
    }
    hc_membership_free(&hm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gw_membership m;
    struct gw_error err;
    memset(&err, 0, sizeof(err));
    int rc = gw_membership_parse((const char *)data, size, "fuzz.json", &m, &err);
    if (rc != 0) {
        /* Every refusal is -EINVAL with "shards: <file>: <path>: <what>" (docs/contract.md §2). */
        FUZZ_REQUIRE(rc == -EINVAL);
        FUZZ_REQUIRE(m.shards == NULL && m.count == 0);
        FUZZ_REQUIRE(memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
        FUZZ_REQUIRE(memchr(err.path, '\0', sizeof(err.path)) != NULL);
        FUZZ_REQUIRE(strncmp(err.msg, "shards: fuzz.json: ", 19) == 0);
        FUZZ_REQUIRE(err.path[0] != '\0');
        return 0;
    }
    /* Accepted: ids valid, unique and in id order; every value in range. */
    for (size_t i = 0; i < m.count; i++) {
        const struct gw_shard *s = &m.shards[i];
        FUZZ_REQUIRE(gw_name_valid(s->id, s->id_len, GW_SHARD_ID_MAX));
        FUZZ_REQUIRE(s->id[s->id_len] == '\0');
        FUZZ_REQUIRE(s->state == GW_STATE_ONLINE || s->state == GW_STATE_DRAINING ||
                     s->state == GW_STATE_OFFLINE);
        FUZZ_REQUIRE(s->capacity <= GW_SAFE_INT_MAX);
        FUZZ_REQUIRE(s->weight >= 1 && s->weight <= 1000);
        if (i > 0) {
            const struct gw_shard *p = &m.shards[i - 1];
            size_t n = p->id_len < s->id_len ? p->id_len : s->id_len;
            int c = memcmp(p->id, s->id, n);
            FUZZ_REQUIRE(c < 0 || (c == 0 && p->id_len < s->id_len));
        }
    }
    check_health_agrees(data, size, &m);
    gw_membership_free(&m);
    return 0;
}
