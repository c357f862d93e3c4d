/* A batch sent in its canonical form (docs/journal.md §3.1) is read by one scan and hashed as
 * sent: it must give exactly what the strict reader gives for the same batch (the same body after
 * a space, which only the strict reader takes), for every body near the canonical grammar. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "batch.h"
#include "check.h"

#define MAX_CHANGES 4

static char *spaced(const char *body, size_t len)
{
    char *s = malloc(len + 1);
    s[0] = ' ';
    memcpy(s + 1, body, len);
    return s;
}

static int same_change(const struct gw_change *a, const struct gw_change *b)
{
    return a->id_len == b->id_len && memcmp(a->id, b->id, a->id_len) == 0 &&
           a->key_len == b->key_len && memcmp(a->key, b->key, a->key_len) == 0 &&
           a->size == b->size;
}

static int same_batch(const struct gw_batch *a, const struct gw_batch *b)
{
    if (a->batch_id_len != b->batch_id_len ||
        memcmp(a->batch_id, b->batch_id, a->batch_id_len) != 0 || a->count != b->count ||
        a->total_size != b->total_size ||
        memcmp(a->fingerprint, b->fingerprint, sizeof(a->fingerprint)) != 0)
        return 0;
    for (size_t i = 0; i < a->count; i++)
        if (!same_change(&a->changes[i], &b->changes[i]))
            return 0;
    return 1;
}

/* Parses `body` and, by the strict reader, the same body after a space: the same code, the same
 * batch, or the same error (the path always; the text but for a syntax error's column). Returns
 * what gw_batch_read_canonical said of the body. */
static int agrees(const char *body, size_t len)
{
    struct gw_batch fast, strict, probe;
    struct gw_error fast_err, strict_err;
    memset(&fast_err, 0, sizeof(fast_err));
    memset(&strict_err, 0, sizeof(strict_err));
    memset(&probe, 0, sizeof(probe));
    int taken = gw_batch_read_canonical(body, len, MAX_CHANGES, &probe);
    if (taken == 1)
        gw_batch_free(&probe);
    char *other = spaced(body, len);
    int rc = gw_batch_parse(body, len, MAX_CHANGES, &fast, &fast_err);
    int rc2 = gw_batch_parse(other, len + 1, MAX_CHANGES, &strict, &strict_err);
    CHECK_EQ_U64((uint64_t)rc, (uint64_t)rc2);
    if (rc == 0 && rc2 == 0) {
        if (!same_batch(&fast, &strict))
            CHECK_EQ_STR(body, "a batch the two readers read differently");
        gw_batch_free(&fast);
        gw_batch_free(&strict);
    } else if (rc != 0 && rc2 != 0) {
        CHECK_EQ_STR(fast_err.path, strict_err.path);
        if (strncmp(fast_err.msg, "$: invalid JSON", 15) != 0)
            CHECK_EQ_STR(fast_err.msg, strict_err.msg);
    }
    free(other);
    return taken;
}

static int agrees_str(const char *body)
{
    return agrees(body, strlen(body));
}

#define HEAD "{\"batch_id\":\"b-1\",\"changes\":["
#define C1 "{\"id\":\"c1\",\"key\":\"k\",\"size\":1}"

/* The golden body: taken, its fingerprint the SHA-256 of its bytes (hashlib's). */
static void test_golden(void)
{
    static const char body[] =
        "{\"batch_id\":\"b-1\",\"changes\":[{\"id\":\"c1\",\"key\":\"key:7919\",\"size\":2},"
        "{\"id\":\"c2\",\"key\":\"user:42\",\"size\":0},"
        "{\"id\":\"c3\",\"key\":\"k\",\"size\":9007199254740989}]}";
    struct gw_batch b;
    struct gw_error err;
    CHECK_EQ_U64(agrees_str(body), 1);
    CHECK_EQ_U64((uint64_t)gw_batch_parse(body, strlen(body), MAX_CHANGES, &b, &err), 0);
    char hex[65];
    for (size_t i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", b.fingerprint[i]);
    CHECK_EQ_STR(hex, "2bfdde87fe2b644277454823b9a36e2da5347c48a71aaef400190f3c3530b766");
    CHECK_EQ_U64(b.count, 3);
    CHECK_EQ_U64(b.total_size, 9007199254740991ULL); /* the most a batch may hold */
    gw_batch_free(&b);
}

/* Bodies the scan must take, and bodies it must leave to the strict reader; either way the two
 * readers agree. */
static void test_near_canonical(void)
{
    static const char *const taken[] = {
        HEAD C1 "]}",
        HEAD C1 "," C1 "]}", /* a duplicate id: the scan reads, the batch refuses */
        HEAD "{\"id\":\"c1\",\"key\":\"k\",\"size\":9007199254740991}," C1 "]}", /* total */
        HEAD "{\"id\":\"c1\",\"key\":\"k/\x7f~ \",\"size\":0}]}", /* '/', DEL: as they are */
        HEAD C1 "," C1 "," C1 "," C1 "]}",                        /* four: the most */
    };
    static const char *const left[] = {
        HEAD C1 "]}\n",
        " " HEAD C1 "]}",
        HEAD C1 " ]}",
        HEAD "]}",
        HEAD C1 "," C1 "," C1 "," C1 "," C1 "]}", /* five: one too many */
        HEAD "{\"id\":\"c1\",\"key\":\"k\",\"size\":01}]}",
        HEAD "{\"id\":\"c1\",\"key\":\"k\",\"size\":-1}]}",
        HEAD "{\"id\":\"c1\",\"key\":\"k\",\"size\":1.0}]}",
        HEAD "{\"id\":\"c1\",\"key\":\"k\",\"size\":1e3}]}",
        HEAD "{\"id\":\"c1\",\"key\":\"k\",\"size\":9007199254740992}]}",
        HEAD "{\"id\":\"c1\",\"key\":\"k\",\"size\":100000000000000000}]}",
        HEAD "{\"id\":\"c1\",\"key\":\"k\",\"size\":18446744073709551617}]}", /* 2^64+1 */
        HEAD "{\"id\":\"\",\"key\":\"k\",\"size\":1}]}",
        HEAD "{\"id\":\"c1\",\"key\":\"\",\"size\":1}]}",
        HEAD "{\"id\":\"c\\u0031\",\"key\":\"k\",\"size\":1}]}",
        HEAD "{\"id\":\"c1\",\"key\":\"\\\"\",\"size\":1}]}",
        HEAD "{\"id\":\"c1\",\"key\":\"\xc3\xa9\",\"size\":1}]}",
        HEAD "{\"id\":\"c1\",\"key\":\"k\xff\",\"size\":1}]}",
        HEAD "{\"id\":\"c1\",\"key\":\"a\tb\",\"size\":1}]}",
        HEAD "{\"key\":\"k\",\"id\":\"c1\",\"size\":1}]}",
        HEAD "{\"id\":\"c1\",\"key\":\"k\",\"size\":1,\"x\":1}]}",
        HEAD "{\"id\":\"c1\",\"key\":\"k\"}]}",
        "{\"batch_id\":\"b 1\",\"changes\":[" C1 "]}",
        "{\"batch_id\":\"\",\"changes\":[" C1 "]}",
        "{\"changes\":[" C1 "],\"batch_id\":\"b-1\"}",
        HEAD C1 "]",
        HEAD C1,
        "",
    };
    for (size_t i = 0; i < sizeof(taken) / sizeof(*taken); i++)
        CHECK_EQ_U64(agrees_str(taken[i]), 1);
    for (size_t i = 0; i < sizeof(left) / sizeof(*left); i++)
        CHECK_EQ_U64(agrees_str(left[i]), 0);
}

/* Lengths at their bounds: an id of 128 bytes and a key of 1024 are taken, one more is not. */
static int taken_with(size_t id_len, size_t key_len)
{
    char body[2048], id[130], key[1026];
    memset(id, 'i', id_len);
    memset(key, 'k', key_len);
    id[id_len] = key[key_len] = '\0';
    snprintf(body, sizeof(body), HEAD "{\"id\":\"%s\",\"key\":\"%s\",\"size\":1}]}", id, key);
    return agrees_str(body);
}

static void test_lengths(void)
{
    CHECK_EQ_U64(taken_with(128, 1024), 1);
    CHECK_EQ_U64(taken_with(129, 1024), 0);
    CHECK_EQ_U64(taken_with(128, 1025), 0);
}

/* Every one-byte change of a canonical body, and every cut: whatever the scan says, the two
 * readers agree. */
static void test_every_byte(void)
{
    static const char base[] = HEAD "{\"id\":\"c1\",\"key\":\"k:1\",\"size\":10},"
                                    "{\"id\":\"c2\",\"key\":\"k:2\",\"size\":0}]}";
    static const char bytes[] = " 0123456789\"\\:,{}[]-.eEau\x01\x7f\xc3";
    char body[sizeof(base)];
    size_t n = sizeof(base) - 1, taken = 0;
    for (size_t at = 0; at < n; at++) {
        for (size_t k = 0; k < sizeof(bytes) - 1; k++) {
            memcpy(body, base, n);
            body[at] = bytes[k];
            taken += (size_t)agrees(body, n);
        }
        taken += (size_t)agrees(base, at);
    }
    CHECK_TRUE(taken > n); /* many changes keep the body canonical: a digit for a digit */
}

/* A key of 37 bytes with one byte changed at each place: the scan tests eight bytes at a time,
 * so every place in a word and every kind of byte that may end a plain string is tried. It takes
 * the body exactly when the byte is plain (0x20..0x7f but for '"' and '\\'), and the two
 * readers agree either way. */
static void test_long_key_every_byte(void)
{
    static const unsigned char bytes[] = {0x01, 0x1f, 0x20, 0x21, 0x5b, 0x5d, 0x7e, 0x7f,
                                          0x80, 0xa0, 0xc3, 0xff, '"',  '\\', 'a'};
    char key[38], body[256];
    for (size_t at = 0; at < 37; at++)
        for (size_t k = 0; k < sizeof(bytes); k++) {
            memset(key, 'k', 37);
            key[37] = '\0';
            key[at] = (char)bytes[k];
            int n = snprintf(body, sizeof(body), HEAD "{\"id\":\"c1\",\"key\":\"%s\",\"size\":1}]}",
                             key);
            unsigned char b = bytes[k];
            int plain = b >= 0x20 && b < 0x80 && b != '"' && b != '\\';
            CHECK_EQ_U64((uint64_t)agrees(body, (size_t)n), (uint64_t)plain);
        }
}

int main(void)
{
    test_long_key_every_byte();
    test_golden();
    test_near_canonical();
    test_lengths();
    test_every_byte();
    return CHECK_DONE();
}
