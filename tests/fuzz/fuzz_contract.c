/* Fuzz target: gw_contract_parse on arbitrary bytes, cross-checked against the health reader. */
#include <errno.h>

#include "../../health/contract.h"
#include "contract.h"
#include "fuzz_common.h"

static const char *const required_keys[] = {
    "DISPATCH_HASH_RING=", "DISPATCH_RING_HASH=", "DISPATCH_CAPACITY_POLICY="};

/* A contract the gateway accepts must be one the health service accepts with the same values:
 * otherwise health could not verify a gateway that runs. */
static void check_health_agrees(const uint8_t *data, size_t size, const struct gw_contract *c)
{
    struct hc_contract hc;
    struct hc_err herr;
    const char *path = fuzz_scratch_file(".env", data, size);
    int rc = hc_contract_load(path, &hc, &herr);
    remove(path);
    if (rc != 0)
        fprintf(stderr, "health refuses a contract the gateway accepts: %s\n", herr.msg);
    FUZZ_REQUIRE(rc == 0);
    FUZZ_REQUIRE(hc.vnodes == c->vnodes && hc.table == c->table);
    FUZZ_REQUIRE((hc.ring == HC_RING_MAGLEV) == (c->algorithm == RING_MAGLEV));
    FUZZ_REQUIRE((hc.ring == HC_RING_JUMP) == (c->algorithm == RING_JUMP));
    FUZZ_REQUIRE((hc.hash == HC_HASH_MD5) == (c->digest == RING_MD5));
    FUZZ_REQUIRE((hc.policy == HC_POLICY_REJECT) == (c->policy == GW_POLICY_REJECT));
}

/* 1 when a line that is not a comment holds a NUL byte. */
static int nul_outside_comments(const uint8_t *data, size_t size)
{
    for (size_t i = 0; i < size;) {
        const uint8_t *nl = memchr(data + i, '\n', size - i);
        size_t end = nl ? (size_t)(nl - data) : size;
        if (data[i] != '#' && memchr(data + i, '\0', end - i))
            return 1;
        i = end + 1;
    }
    return 0;
}

/* A NUL byte in a setting is refused by the health reader too, never read as a shorter value. */
static void check_health_refuses_nul(const uint8_t *data, size_t size)
{
    struct hc_contract hc;
    struct hc_err herr;
    const char *path = fuzz_scratch_file(".env", data, size);
    int rc = hc_contract_load(path, &hc, &herr);
    remove(path);
    if (rc == 0)
        fprintf(stderr, "health reads a contract with a NUL byte: vnodes %u\n", hc.vnodes);
    FUZZ_REQUIRE(rc != 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gw_contract c;
    struct gw_error err;
    memset(&c, 0xa5, sizeof(c)); /* nothing may be taken from an unset field */
    memset(&err, 0, sizeof(err));
    int rc = gw_contract_parse((const char *)data, size, "fuzz.env", &c, &err);
    if (rc != 0) {
        /* Every refusal is -EINVAL with "contract: <file>:<line>: <what>" (docs/contract.md §1). */
        FUZZ_REQUIRE(rc == -EINVAL);
        FUZZ_REQUIRE(memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
        FUZZ_REQUIRE(strncmp(err.msg, "contract: fuzz.env:", 19) == 0);
        FUZZ_REQUIRE(strlen(err.msg) > 19);
        if (nul_outside_comments(data, size))
            check_health_refuses_nul(data, size);
        return 0;
    }
    /* No defaults: an accepted contract names every key, and every value is in range. */
    for (size_t i = 0; i < sizeof(required_keys) / sizeof(required_keys[0]); i++)
        FUZZ_REQUIRE(fuzz_contains(data, size, required_keys[i]));
    if (c.algorithm == RING_MAGLEV)
        FUZZ_REQUIRE(fuzz_contains(data, size, "DISPATCH_MAGLEV_TABLE=") && c.vnodes == 0 &&
                     c.table >= 2 && c.table <= RING_MAGLEV_TABLE_MAX &&
                     ring_maglev_prime(c.table) && c.policy != GW_POLICY_SPILL);
    else if (c.algorithm == RING_JUMP)
        FUZZ_REQUIRE(fuzz_contains(data, size, "DISPATCH_JUMP_SLOTS=") && c.vnodes == 0 &&
                     c.table >= 1 && c.table <= RING_JUMP_SLOTS_MAX && c.policy != GW_POLICY_SPILL);
    else
        FUZZ_REQUIRE(fuzz_contains(data, size, "DISPATCH_VNODES=") && c.table == 0 &&
                     c.vnodes >= 1 && c.vnodes <= RING_VNODES_MAX);
    FUZZ_REQUIRE(c.digest == RING_SHA1 || c.digest == RING_MD5);
    FUZZ_REQUIRE(c.policy == GW_POLICY_REPORT || c.policy == GW_POLICY_REJECT);
    check_health_agrees(data, size, &c);
    return 0;
}
