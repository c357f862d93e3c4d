/* The journal line checksum (docs/journal.md §2.1): golden lines, and every way a check fails. */
#include <errno.h>
#include <string.h>
#include <zlib.h>

#include "buf.h"
#include "check.h"
#include "error.h"
#include "journal_ids.h"
#include "line_check.h"

#define FP "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

static const char *ended(struct gw_buf *b, const char *prefix, const char *record)
{
    gw_buf_reset(b);
    gw_buf_puts(b, prefix);
    size_t start = b->len;
    gw_buf_puts(b, record);
    gw_record_end(b, start);
    gw_buf_append(b, "", 1);
    return b->data;
}

static void test_golden(void)
{
    struct gw_buf b;
    gw_buf_init(&b);
    /* crc32(b'{"a":1') = a702fc6e (zlib.crc32, the CRC-32 of gzip and PNG) */
    CHECK_EQ_STR(ended(&b, "", "{\"a\":1}"), "{\"a\":1,\"crc32\":\"a702fc6e\"}\n");
    /* only the record's own bytes are covered, not what the buffer held before it */
    CHECK_EQ_STR(ended(&b, "{\"x\":2,\"crc32\":\"00000000\"}\n", "{\"a\":1}"),
                 "{\"x\":2,\"crc32\":\"00000000\"}\n{\"a\":1,\"crc32\":\"a702fc6e\"}\n");
    gw_buf_free(&b);
}

/* A record ended from the CRC of its last bytes, computed apart, is the same line. */
/* The line CRC is zlib's, whatever computes it (docs/decisions.md §10): every length to 4 KiB,
 * from every alignment of a buffer of all byte values. */
static void test_crc_is_zlibs(void)
{
    static unsigned char bytes[4096 + 8];
    for (size_t i = 0; i < sizeof(bytes); i++)
        bytes[i] = (unsigned char)(i * 131 + (i >> 8) * 7 + 1);
    size_t wrong = 0;
    for (size_t at = 0; at < 8; at++)
        for (size_t n = 0; n <= 4096; n++)
            wrong += gw_record_crc((const char *)bytes + at, n) != crc32(0L, bytes + at, (uInt)n);
    CHECK_EQ_U64(wrong, 0);
}

/* A record closed around a receipt written elsewhere: the line, put together, is the one
 * gw_record_end makes of the whole record. */
static void test_close_around(void)
{
    const char *prefix = "{\"type\":\"receipt\",\"seq\":7,\"receipt\":";
    const char *receipt = "{\"a\":[1,2,3]}";
    struct gw_buf a, b, line;
    gw_buf_init(&a);
    gw_buf_init(&b);
    gw_buf_init(&line);
    gw_buf_puts(&a, "x\n");
    gw_buf_puts(&a, prefix);
    gw_buf_puts(&a, receipt);
    gw_buf_puts(&a, "}");
    gw_record_end(&a, 2);
    gw_buf_puts(&b, "x\n");
    gw_buf_puts(&b, prefix);
    size_t at = b.len;
    gw_record_close_around(&b, 2, strlen(receipt), gw_record_crc(receipt, strlen(receipt)));
    gw_buf_append(&line, b.data, at);
    gw_buf_puts(&line, receipt);
    gw_buf_append(&line, b.data + at, b.len - at);
    gw_buf_append(&a, "", 1);
    gw_buf_append(&line, "", 1);
    CHECK_EQ_STR(line.data, a.data);
    CHECK_EQ_STR(line.data + at + strlen(receipt), ",\"crc32\":\"8601128f\"}\n");
    size_t body;
    CHECK_EQ_U64(gw_record_check(line.data + 2, line.len - 4, &body), 0);
    gw_buf_free(&a);
    gw_buf_free(&b);
    gw_buf_free(&line);
}

static int check(const char *line, size_t *body)
{
    return gw_record_check(line, strlen(line), body);
}

static void test_check(void)
{
    size_t body = 0;
    CHECK_EQ_U64(check("{\"a\":1,\"crc32\":\"a702fc6e\"}", &body), 0);
    CHECK_EQ_U64(body, 6);
    CHECK_EQ_U64(check("{\"a\":2,\"crc32\":\"a702fc6e\"}", &body), -EBADMSG); /* a byte of it */
    CHECK_EQ_U64(check("{\"a\":1,\"crc32\":\"a702fc6f\"}", &body), -EBADMSG); /* the crc */
    CHECK_EQ_U64(check("{\"a\":1,\"crc32\":\"A702FC6E\"}", &body), -ENOMSG);  /* lowercase */
    CHECK_EQ_U64(check("{\"a\":1,\"crc33\":\"a702fc6e\"}", &body), -ENOMSG);  /* the member */
    CHECK_EQ_U64(check("{\"a\":1,\"crc32\":\"a702fc6e\"]", &body), -ENOMSG);  /* the brace */
    CHECK_EQ_U64(check("{\"a\":1}", &body), -ENOMSG);                         /* a legacy line */
    CHECK_EQ_U64(check(",\"crc32\":\"00000000\"}", &body), -ENOMSG);          /* tail only */
    CHECK_EQ_U64(check("", &body), -ENOMSG);
}

/* A segment's lines, each ended with its checksum: a header and two receipts. */
static void segment_lines(struct gw_buf *b)
{
    static const char *records[] = {
        "{\"type\":\"segment\",\"first_seq\":1}",
        "{\"type\":\"receipt\",\"seq\":1,\"fingerprint\":\"" FP "\",\"receipt\":{"
        "\"receipt_version\":2,\"batch_id\":\"a-0001\"}}",
        "{\"type\":\"receipt\",\"seq\":2,\"fingerprint\":\"" FP "\",\"receipt\":{"
        "\"receipt_version\":2,\"batch_id\":\"a-0003\"}}",
    };
    gw_buf_reset(b);
    for (size_t i = 0; i < 3; i++) {
        size_t start = b->len;
        gw_buf_puts(b, records[i]);
        gw_record_end(b, start);
    }
}

/* The archived ids come from checked lines only (docs/journal.md §8): a changed byte in a
 * receipt's batch_id is refused with the line named, never turned into an id. */
static void test_ids_from_checked_lines(void)
{
    struct gw_buf seg, ids;
    struct gw_error err;
    gw_buf_init(&seg);
    gw_buf_init(&ids);
    segment_lines(&seg);
    CHECK_EQ_U64(gw_archived_ids_build(seg.data, seg.len, "seg", 2, &ids, &err), 0);
    gw_buf_append(&ids, "", 1);
    CHECK_TRUE(strstr(ids.data, "{\"batch_id\":\"a-0003\"}") != NULL);
    char *at = strstr(seg.data, "a-0003");
    at[2] = '9'; /* a-9003 */
    CHECK_EQ_U64(gw_archived_ids_build(seg.data, seg.len, "seg", 2, &ids, &err), -EINVAL);
    CHECK_EQ_STR(err.msg, "journal: seg:3: checksum mismatch: the line's crc32 is not that of its "
                          "bytes");
    gw_buf_free(&seg);
    gw_buf_free(&ids);
}

int main(void)
{
    test_crc_is_zlibs();
    test_ids_from_checked_lines();
    test_golden();
    test_close_around();
    test_check();
    printf("%d passed, %d failed\n", check_passes, check_failures);
    return check_failures ? 1 : 0;
}
