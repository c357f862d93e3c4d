/* The streamed JSON writer: escaping and integers, byte for byte; the ledger's exact totals. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "buf.h"
#include "ledger.h"
#include "check.h"

static const char *render_string(struct gw_buf *b, const char *s, size_t len)
{
    gw_buf_reset(b);
    gw_buf_json_string(b, s, len);
    gw_buf_append(b, "", 1);
    return b->data;
}

static void test_escaping(void)
{
    struct gw_buf b;
    gw_buf_init(&b);
    CHECK_EQ_STR(render_string(&b, "plain", 5), "\"plain\"");
    CHECK_EQ_STR(render_string(&b, "a\"b\\c", 5), "\"a\\\"b\\\\c\"");
    CHECK_EQ_STR(render_string(&b, "\b\f\n\r\t", 5), "\"\\b\\f\\n\\r\\t\"");
    CHECK_EQ_STR(render_string(&b, "\x01\x1f", 2), "\"\\u0001\\u001f\"");
    CHECK_EQ_STR(render_string(&b, "nul:\0!", 6), "\"nul:\\u0000!\"");
    CHECK_EQ_STR(render_string(&b, "/\x7f", 2), "\"/\x7f\""); /* not escaped, as Python */
    CHECK_EQ_STR(render_string(&b, "caf\xc3\xa9 \xe2\x82\xac", 9), "\"caf\xc3\xa9 \xe2\x82\xac\"");
    CHECK_EQ_STR(render_string(&b, "", 0), "\"\"");
    gw_buf_free(&b);
}

/* Every byte value below 0x20 gets the form Python's json.dumps gives it. */
static void test_every_control_byte(void)
{
    static const char *const want[32] = {
        "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007",
        "\\b",     "\\t",     "\\n",     "\\u000b", "\\f",     "\\r",     "\\u000e", "\\u000f",
        "\\u0010", "\\u0011", "\\u0012", "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017",
        "\\u0018", "\\u0019", "\\u001a", "\\u001b", "\\u001c", "\\u001d", "\\u001e", "\\u001f"};
    struct gw_buf b;
    gw_buf_init(&b);
    for (int c = 0; c < 32; c++) {
        char in = (char)c, expect[16];
        snprintf(expect, sizeof(expect), "\"%s\"", want[c]);
        CHECK_EQ_STR(render_string(&b, &in, 1), expect);
    }
    gw_buf_free(&b);
}

/* What is not UTF-8 is written as \ufffd, a byte at a time; every well-formed sequence of one
 * to four bytes stays as it is (docs/api.md §1). */
static void test_invalid_utf8(void)
{
    struct gw_buf b;
    gw_buf_init(&b);
    CHECK_EQ_STR(render_string(&b, "\xff\xfe", 2), "\"\\ufffd\\ufffd\"");
    CHECK_EQ_STR(render_string(&b, "\xc3(", 2), "\"\\ufffd(\"");          /* cut short */
    CHECK_EQ_STR(render_string(&b, "\xc0\xaf", 2), "\"\\ufffd\\ufffd\""); /* overlong */
    CHECK_EQ_STR(render_string(&b, "\xe0\x80\xaf", 3), "\"\\ufffd\\ufffd\\ufffd\"");
    CHECK_EQ_STR(render_string(&b, "\xed\xa0\x80", 3), "\"\\ufffd\\ufffd\\ufffd\""); /* surrogate */
    CHECK_EQ_STR(render_string(&b, "\xf4\x90\x80\x80", 4),
                 "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");                       /* past U+10FFFF */
    CHECK_EQ_STR(render_string(&b, "a\xe2\x82", 3), "\"a\\ufffd\\ufffd\""); /* at the end */
    CHECK_EQ_STR(render_string(&b, "\xc2\x80\xed\x9f\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf", 13),
                 "\"\xc2\x80\xed\x9f\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\"");
    gw_buf_free(&b);
}

static void test_integers(void)
{
    struct gw_buf b;
    gw_buf_init(&b);
    gw_buf_u64(&b, 0);
    gw_buf_puts(&b, ",");
    gw_buf_u64(&b, 9007199254740991ULL);
    gw_buf_puts(&b, ",");
    gw_buf_u64(&b, UINT64_MAX);
    gw_buf_append(&b, "", 1);
    CHECK_EQ_STR(b.data, "0,9007199254740991,18446744073709551615");
    /* every digit count's first and last value, and every value up to 100,000, as printf has */
    char want[24];
    uint64_t ten = 1;
    for (int k = 0; k < 20; k++, ten *= 10) {
        uint64_t both[2] = {ten - 1, ten};
        for (int i = 0; i < 2; i++) {
            gw_buf_reset(&b);
            gw_buf_u64(&b, both[i]);
            gw_buf_append(&b, "", 1);
            snprintf(want, sizeof(want), "%llu", (unsigned long long)both[i]);
            CHECK_EQ_STR(b.data, want);
        }
    }
    /* either side of 2^32, where the 32-bit digits take over from the 64-bit ones */
    for (uint64_t v = UINT32_MAX - 300; v <= UINT32_MAX + 300ULL; v++) {
        gw_buf_reset(&b);
        gw_buf_u64(&b, v);
        gw_buf_append(&b, "", 1);
        snprintf(want, sizeof(want), "%llu", (unsigned long long)v);
        CHECK_EQ_STR(b.data, want);
    }
    for (uint64_t v = 0; v <= 100000; v++) {
        gw_buf_reset(&b);
        gw_buf_u64(&b, v);
        gw_buf_append(&b, "", 1);
        snprintf(want, sizeof(want), "%llu", (unsigned long long)v);
        CHECK_EQ_STR(b.data, want);
    }
    gw_buf_reset(&b);
    const unsigned char bytes[] = {0x00, 0xab, 0xff};
    gw_buf_hex(&b, bytes, 3);
    gw_buf_append(&b, "", 1);
    CHECK_EQ_STR(b.data, "00abff");
    gw_buf_free(&b);
}

/* 128-bit totals are printed exactly (docs/api.md, GET /v1/shards): past 2^64, and at the top. */
static void test_u128(void)
{
    struct gw_buf b;
    gw_buf_init(&b);
    gw_buf_u128(&b, 0);
    gw_buf_field_u128(&b, ",", (gw_u128)UINT64_MAX + 1);
    gw_buf_field_u128(&b, ",", (gw_u128)2050 * 9007199254740991ULL);
    gw_buf_field_u128(&b, ",", ~(gw_u128)0);
    gw_buf_append(&b, "", 1);
    CHECK_EQ_STR(b.data, "0,18446744073709551616,18464758472219031550,"
                         "340282366920938463463374607431768211455");
    gw_buf_free(&b);
}

/* 2,050 receipts of load 2^53 - 1 on one shard pass 2^64; the ledger keeps the exact sum. */
static void test_ledger_past_2_64(void)
{
    struct gw_ledger l;
    CHECK_EQ_U64(gw_ledger_init(&l), 0);
    struct gw_shard shards[2] = {{.id = "a", .id_len = 1}, {.id = "b", .id_len = 1}};
    struct gw_membership m = {shards, 2};
    size_t slots[2];
    CHECK_EQ_U64(gw_ledger_register(&l, &m, slots), 0);
    struct gw_tally tally[2] = {{9007199254740991ULL, 1}, {0, 0}};
    for (int i = 0; i < 2049; i++)
        gw_ledger_add(&l, 1, slots, tally, 2);
    CHECK_EQ_U64(gw_ledger_add_id(&l, 1, "a", 1, 9007199254740991ULL, 1), 0);
    struct gw_total totals[2];
    gw_ledger_totals(&l, slots, 2, totals);
    struct gw_buf b;
    gw_buf_init(&b);
    gw_buf_u128(&b, totals[0].load);
    gw_buf_field_u128(&b, " ", totals[0].received);
    gw_buf_field_u128(&b, " ", totals[1].load);
    gw_buf_append(&b, "", 1);
    CHECK_EQ_STR(b.data, "18464758472219031550 2050 0");
    gw_buf_free(&b);
    gw_ledger_free(&l);
}

/* Once a per-epoch total was lost (out of memory), the ledger refuses every checkpoint body:
 * a checkpoint must never hold per-epoch totals short of a receipt. */
static void test_ledger_checkpoint_refused_after_lost_totals(void)
{
    struct gw_ledger l;
    CHECK_EQ_U64(gw_ledger_init(&l), 0);
    struct gw_shard shards[1] = {{.id = "a", .id_len = 1}};
    struct gw_membership m = {shards, 1};
    size_t slots[1];
    CHECK_EQ_U64(gw_ledger_register(&l, &m, slots), 0);
    struct gw_tally tally[1] = {{5, 1}};
    CHECK_EQ_U64(gw_ledger_add(&l, 1, slots, tally, 1), 0);
    struct gw_buf b;
    gw_buf_init(&b);
    CHECK_EQ_U64(gw_ledger_write_checkpoint(&l, &b), 0);
    gw_buf_append(&b, "", 1);
    CHECK_EQ_STR(b.data, "\"ledger\":[{\"id\":\"a\",\"weight\":0,\"capacity\":0,\"load\":5,"
                         "\"received\":1}],\"totals\":[{\"epoch_seq\":1,\"shards\":[{\"id\":"
                         "\"a\",\"load\":5,\"received\":1}]}]");
    l.epochs_incomplete = 1; /* what an out-of-memory in gw_ledger_add leaves */
    gw_buf_free(&b);
    gw_buf_init(&b);
    CHECK_EQ_U64(gw_ledger_write_checkpoint(&l, &b), (uint64_t)-ENOMEM);
    CHECK_EQ_U64(b.len, 0);
    gw_buf_free(&b);
    gw_ledger_free(&l);
}

int main(void)
{
    test_escaping();
    test_every_control_byte();
    test_invalid_utf8();
    test_integers();
    test_u128();
    test_ledger_past_2_64();
    test_ledger_checkpoint_refused_after_lost_totals();
    return CHECK_DONE();
}
