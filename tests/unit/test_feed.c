/* The feed reader (gateway/store/file/feed.c): the placements of stored receipts read without a
 * JSON tree, byte for byte, and reads after a cursor over segment files — epoch records just
 * before their first receipt, a segment's repeated epoch record skipped, seeks by the sparse
 * index equal to a scan, the bound, and a cursor older than the oldest segment. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "feed.h"
#include "feed_placements.h"
#include "fileio.h"
#include "line_check.h"
#include "check.h"

static const char *src_dir;

static char *golden(const char *name)
{
    char path[4096];
    char *data = NULL;
    size_t len = 0;
    snprintf(path, sizeof(path), "%s/tests/golden/%s", src_dir, name);
    if (gw_file_read(path, &data, &len) != 0)
        return NULL;
    while (len && data[len - 1] == '\n')
        data[--len] = '\0';
    return data;
}

static void record_line(struct gw_buf *b, uint64_t seq, const char *receipt)
{
    gw_buf_field_u64(b, "{\"type\":\"receipt\",\"seq\":", seq);
    gw_buf_puts(b, ",\"fingerprint\":\"0000000000000000000000000000000000000000000000000000000000"
                   "000000\",\"receipt\":");
    gw_buf_puts(b, receipt);
    gw_buf_puts(b, "}");
}

/* "id key size shard;" for every placement of a receipt record. */
static void placements_of(const char *receipt, struct gw_buf *out)
{
    struct gw_buf line;
    gw_buf_init(&line);
    record_line(&line, 7, receipt);
    struct gw_feed_receipt r;
    struct gw_feed_placement p;
    gw_buf_reset(out);
    CHECK_EQ_U64(gw_feed_receipt_open(line.data, line.len, &r), 0);
    int rc;
    while ((rc = gw_feed_receipt_next(&r, &p)) == 1) {
        gw_buf_append(out, p.id.p, p.id.n);
        gw_buf_append(out, " ", 1);
        gw_buf_append(out, p.key.p, p.key.n);
        gw_buf_field_u64(out, " ", p.size);
        gw_buf_append(out, " ", 1);
        gw_buf_append(out, p.shard.p, p.shard.n);
        gw_buf_append(out, ";", 1);
    }
    CHECK_EQ_U64(rc, 0);
    gw_buf_append(out, r.batch_id.p, r.batch_id.n);
    gw_buf_append(out, "", 1);
    gw_buf_free(&line);
}

static void test_placements_golden(void)
{
    char *v2 = golden("sample-0001.receipt.v2.json"),
         *spill = golden("spill/spill-0001.receipt.json");
    struct gw_buf out;
    gw_buf_init(&out);
    CHECK_TRUE(v2 && spill);
    placements_of(v2, &out);
    CHECK_EQ_STR(out.data,
                 "\"ch-001\" \"order:1001\" 4 \"shard-b\";\"ch-002\" \"user:42\" 2 \"shard-c\";"
                 "\"ch-003\" \"cart:9\" 3 \"shard-a\";\"ch-004\" \"sku:55\" 5 \"shard-a\";"
                 "\"ch-005\" \"user:842\" 1 \"shard-c\";\"ch-006\" \"order:1002\" 2 \"shard-b\";"
                 "\"ch-007\" \"invoice:8\" 6 \"shard-c\";\"ch-008\" \"user:7\" 1 \"shard-c\";"
                 "\"sample-0001\"");
    placements_of(spill, &out);
    /* ch-007 spilled from its home shard-c: the shard it sits on counts, not its home. */
    CHECK_EQ_STR(out.data,
                 "\"ch-001\" \"order:1001\" 4 \"shard-b\";\"ch-002\" \"user:42\" 2 \"shard-c\";"
                 "\"ch-003\" \"cart:9\" 3 \"shard-a\";\"ch-004\" \"sku:55\" 5 \"shard-a\";"
                 "\"ch-005\" \"user:842\" 1 \"shard-c\";\"ch-006\" \"order:1002\" 2 \"shard-b\";"
                 "\"ch-007\" \"invoice:8\" 6 \"shard-a\";\"ch-008\" \"user:7\" 1 \"shard-c\";"
                 "\"sample-0001\"");
    free(v2);
    free(spill);
    gw_buf_free(&out);
}

/* Escaped quotes and backslashes inside strings do not end them. */
static void test_placements_escapes(void)
{
    const char *receipt =
        "{\"receipt_version\":1,\"batch_id\":\"b\\\\\\\"x\",\"ring\":{\"id\":\"r\",\"online\":"
        "[\"s1\"]},\"placements\":[{\"id\":\"a\\\"},\",\"key\":\"k\\\\\",\"size\":12,\"hash\":1,"
        "\"point\":2,\"vnode\":3,\"shard\":\"s1\",\"reason\":\"ring\"}],\"shards\":{}}";
    struct gw_buf out;
    gw_buf_init(&out);
    placements_of(receipt, &out);
    CHECK_EQ_STR(out.data, "\"a\\\"},\" \"k\\\\\" 12 \"s1\";\"b\\\\\\\"x\"");
    gw_buf_free(&out);
}

static void small_receipt(struct gw_buf *b, uint64_t seq)
{
    char r[200];
    snprintf(r, sizeof(r),
             "{\"receipt_version\":1,\"batch_id\":\"b%llu\",\"ring\":{},\"placements\":[{\"id\":"
             "\"c\",\"key\":\"k\",\"size\":1,\"hash\":1,\"point\":1,\"vnode\":1,\"shard\":\"s\","
             "\"reason\":\"ring\"}],\"shards\":{}}",
             (unsigned long long)seq);
    size_t start = b->len;
    record_line(b, seq, r);
    gw_record_end(b, start);
}

/* A checked journal line (docs/journal.md §2.1), as the writer ends every record. */
static void put_line(struct gw_buf *b, const char *record)
{
    size_t start = b->len;
    gw_buf_puts(b, record);
    gw_record_end(b, start);
}

static int write_file(const char *dir, const char *name, const struct gw_buf *b)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t n = fwrite(b->data, 1, b->len, f);
    return fclose(f) == 0 && n == b->len ? 0 : -1;
}

/* Segment 1 (sealed): E1, receipts 1..3000, E2. Active (first_seq 3001): header, E2 repeated,
 * receipts 3001..3005, E3, receipt 3006, E4 (no receipt after it yet). */
static int make_state(const char *dir)
{
    struct gw_buf b;
    gw_buf_init(&b);
    put_line(&b, "{\"type\":\"epoch\",\"epoch\":\"E1\"}");
    for (uint64_t s = 1; s <= 3000; s++)
        small_receipt(&b, s);
    put_line(&b, "{\"type\":\"epoch\",\"epoch\":\"E2\"}");
    put_line(&b, "{\"type\":\"seal\",\"last_seq\":3000,\"bytes\":1,\"sha256\":\"00\"}");
    int rc = write_file(dir, "journal-00000000000000000001.jsonl", &b);
    gw_buf_reset(&b);
    put_line(&b, "{\"type\":\"segment\",\"first_seq\":3001,\"prev\":\"00\"}");
    put_line(&b, "{\"type\":\"epoch\",\"epoch\":\"E2\"}");
    for (uint64_t s = 3001; s <= 3005; s++)
        small_receipt(&b, s);
    put_line(&b, "{\"type\":\"epoch\",\"epoch\":\"E3\"}");
    small_receipt(&b, 3006);
    put_line(&b, "{\"type\":\"epoch\",\"epoch\":\"E4\"}");
    rc |= write_file(dir, "journal.jsonl", &b);
    gw_buf_free(&b);
    return rc;
}

/* What a read visits, as "E2@3001 R3001 ..." (receipts before `quiet_below` not written). */
struct trace {
    struct gw_buf text;
    uint64_t quiet_below, stop_at, receipts;
};

static int trace_visit(void *ctx, const struct gw_feed_record *rec)
{
    struct trace *t = ctx;
    char item[64];
    if (rec->kind == GW_FEED_EPOCH) {
        snprintf(item, sizeof(item), "%.2s@%llu ", rec->line + 25, (unsigned long long)rec->seq);
        gw_buf_puts(&t->text, item);
        return 0;
    }
    t->receipts++;
    if (rec->seq >= t->quiet_below) {
        snprintf(item, sizeof(item), "R%llu ", (unsigned long long)rec->seq);
        gw_buf_puts(&t->text, item);
    }
    return rec->seq == t->stop_at;
}

static const char *trace_read(struct gw_feed *f, uint64_t after, uint64_t quiet_below,
                              uint64_t stop_at, uint64_t *last, int *rc)
{
    static struct trace t;
    struct gw_feed_fault fault = {0};
    gw_buf_free(&t.text);
    gw_buf_init(&t.text);
    t.quiet_below = quiet_below;
    t.stop_at = stop_at;
    t.receipts = 0;
    *rc = gw_feed_read(f, after, trace_visit, &t, NULL, last, &fault);
    if (*rc == -ESTALE) {
        gw_buf_field_u64(&t.text, "earliest ", fault.earliest);
    }
    gw_buf_append(&t.text, "", 1);
    return t.text.data;
}

static void test_reads(const char *dir)
{
    struct gw_feed f;
    uint64_t last = 0;
    int rc;
    CHECK_EQ_U64(gw_feed_init(&f, dir), 0);
    CHECK_EQ_STR(trace_read(&f, 0, 3001, 0, &last, &rc), ""); /* nothing durable yet */
    gw_feed_durable(&f, 3006);
    CHECK_EQ_STR(trace_read(&f, 0, 2999, 0, &last, &rc),
                 "E1@1 R2999 R3000 E2@3001 R3001 R3002 R3003 R3004 R3005 E3@3006 R3006 ");
    CHECK_EQ_U64(rc, 0);
    CHECK_EQ_U64(last, 3006);
    /* Marks at most 1024 receipts and 256 KiB apart, and at the active segment's first. */
    CHECK_TRUE(f.nmarks >= 3);
    for (size_t i = 1; i < f.nmarks; i++) {
        CHECK_TRUE(f.marks[i].seq > f.marks[i - 1].seq);
        CHECK_TRUE(f.marks[i].seq - f.marks[i - 1].seq <= GW_FEED_MARK_EVERY);
        CHECK_TRUE(f.marks[i].segment != f.marks[i - 1].segment ||
                   f.marks[i].offset - f.marks[i - 1].offset <= GW_FEED_MARK_BYTES + 400);
    }
    CHECK_EQ_U64(f.marks[f.nmarks - 1].seq, 3001);
    CHECK_EQ_U64(f.marks[f.nmarks - 1].segment, 3001);
    /* From a mark: the same records as a scan would give. */
    CHECK_EQ_STR(trace_read(&f, 2999, 0, 0, &last, &rc),
                 "R3000 E2@3001 R3001 R3002 R3003 R3004 R3005 E3@3006 R3006 ");
    CHECK_EQ_STR(trace_read(&f, 3000, 0, 0, &last, &rc),
                 "E2@3001 R3001 R3002 R3003 R3004 R3005 E3@3006 R3006 ");
    CHECK_EQ_STR(trace_read(&f, 3001, 0, 0, &last, &rc), "R3002 R3003 R3004 R3005 E3@3006 R3006 ");
    CHECK_EQ_STR(trace_read(&f, 2048, 2048, 2050, &last, &rc), "R2049 R2050 ");
    CHECK_EQ_U64(last, 2050);
    CHECK_EQ_STR(trace_read(&f, 3006, 0, 0, &last, &rc), ""); /* E4 waits for receipt 3007 */
    CHECK_EQ_U64(last, 3006);
    gw_feed_durable(&f, 3003); /* the bound: nothing after it, whatever the file holds */
    CHECK_EQ_STR(trace_read(&f, 3000, 0, 0, &last, &rc), "E2@3001 R3001 R3002 R3003 ");
    CHECK_EQ_U64(last, 3003);
    gw_feed_free(&f);
}

/* A caller's position: the next read after the last one starts where it stopped, and gives
 * what a read from a mark gives. */
static void test_position(const char *dir)
{
    struct gw_feed f;
    struct gw_feed_mark pos = {0, 0, 0};
    struct trace t = {.quiet_below = 0};
    uint64_t last = 0;
    struct gw_feed_fault fault = {0};
    CHECK_EQ_U64(gw_feed_init(&f, dir), 0);
    gw_feed_durable(&f, 3004);
    gw_buf_init(&t.text);
    CHECK_EQ_U64(gw_feed_read(&f, 2999, trace_visit, &t, &pos, &last, &fault), 0);
    CHECK_EQ_U64(pos.seq, 3004);
    CHECK_EQ_U64(pos.segment, 3001);
    struct gw_feed_mark after_3004 = pos;
    gw_feed_durable(&f, 3006);
    gw_buf_reset(&t.text);
    CHECK_EQ_U64(gw_feed_read(&f, 3004, trace_visit, &t, &pos, &last, &fault), 0);
    gw_buf_append(&t.text, "", 1);
    CHECK_EQ_STR(t.text.data, "R3005 E3@3006 R3006 ");
    CHECK_EQ_U64(pos.seq, 3006);
    /* The position is used, not a mark: the one after 3004, said to be after 3002, skips
     * 3003 and 3004. */
    pos = (struct gw_feed_mark){3002, 3001, after_3004.offset};
    gw_buf_reset(&t.text);
    CHECK_EQ_U64(gw_feed_read(&f, 3002, trace_visit, &t, &pos, &last, &fault), 0);
    gw_buf_append(&t.text, "", 1);
    CHECK_EQ_STR(t.text.data, "R3005 E3@3006 R3006 ");
    gw_buf_free(&t.text);
    gw_feed_free(&f);
}

/* The writer rotates (docs/journal.md §6): journal.jsonl renamed to its sealed name, then a new
 * journal.jsonl, then the group written and announced. A read with the kept listing in between
 * delivers nothing it cannot find and never fails; after the announcement the listing is
 * replaced and every record comes, in order. */
static void test_rotation(const char *dir)
{
    struct gw_feed f;
    uint64_t last = 0;
    int rc;
    char from[4096], to[4096];
    CHECK_EQ_U64(gw_feed_init(&f, dir), 0);
    gw_feed_active_segment(&f, 3001, UINT64_MAX);
    gw_feed_durable(&f, 3006);
    CHECK_EQ_STR(trace_read(&f, 3005, 0, 0, &last, &rc), "E3@3006 R3006 "); /* listed, kept */
    snprintf(from, sizeof(from), "%s/journal.jsonl", dir);
    snprintf(to, sizeof(to), "%s/journal-00000000000000003001.jsonl", dir);
    CHECK_EQ_U64(rename(from, to), 0); /* sealed; no active segment for a moment */
    CHECK_EQ_STR(trace_read(&f, 3005, 0, 0, &last, &rc), "");
    CHECK_EQ_U64(rc, 0);
    CHECK_EQ_U64(last, 3005);
    CHECK_EQ_STR(trace_read(&f, 0, 2999, 0, &last, &rc), "E1@1 R2999 R3000 ");
    CHECK_EQ_U64(rc, 0);
    CHECK_EQ_U64(last, 3000);
    struct gw_buf b;
    gw_buf_init(&b);
    put_line(&b, "{\"type\":\"segment\",\"first_seq\":3007,\"prev\":\"00\"}");
    put_line(&b, "{\"type\":\"epoch\",\"epoch\":\"E4\"}");
    small_receipt(&b, 3007);
    CHECK_EQ_U64(write_file(dir, "journal.jsonl", &b), 0);
    gw_buf_free(&b);
    CHECK_EQ_STR(trace_read(&f, 3005, 0, 0, &last, &rc), ""); /* not announced yet */
    CHECK_EQ_U64(rc, 0);
    CHECK_EQ_U64(last, 3005);
    gw_feed_active_segment(&f, 3007, UINT64_MAX);
    gw_feed_durable(&f, 3007);
    CHECK_EQ_STR(trace_read(&f, 3005, 0, 0, &last, &rc), "E3@3006 R3006 E4@3007 R3007 ");
    CHECK_EQ_U64(rc, 0);
    CHECK_EQ_STR(trace_read(&f, 2999, 0, 0, &last, &rc),
                 "R3000 E2@3001 R3001 R3002 R3003 R3004 R3005 E3@3006 R3006 E4@3007 R3007 ");
    CHECK_EQ_U64(last, 3007);
    gw_feed_free(&f);
}

/* The oldest segment moved away: a cursor before it is -ESTALE with its first_seq. */
static void test_stale(const char *dir)
{
    struct gw_feed f;
    uint64_t last = 0;
    int rc;
    char from[4096], to[4096];
    snprintf(from, sizeof(from), "%s/journal-00000000000000000001.jsonl", dir);
    snprintf(to, sizeof(to), "%s/moved.jsonl", dir);
    CHECK_EQ_U64(rename(from, to), 0);
    CHECK_EQ_U64(gw_feed_init(&f, dir), 0);
    gw_feed_durable(&f, 3006);
    CHECK_EQ_STR(trace_read(&f, 2999, 0, 0, &last, &rc), "earliest 3001");
    CHECK_EQ_U64(rc, (uint64_t)-ESTALE);
    CHECK_EQ_STR(trace_read(&f, 3000, 0, 0, &last, &rc),
                 "R3001 R3002 R3003 R3004 R3005 E3@3006 R3006 ");
    CHECK_EQ_U64(rc, 0);
    gw_feed_free(&f);
}

/* A byte changed in receipt 3003's line (docs/journal.md §2.1): a read that reaches it fails
 * naming where it is and delivers nothing of it; one that stops before it, or a segment written
 * before checksums, does not check it; a line past the announced durable bytes is not read. */
static void test_damage(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/journal.jsonl", dir);
    char *data = NULL;
    size_t len = 0;
    CHECK_EQ_U64(gw_file_read(path, &data, &len), 0);
    struct gw_buf b;
    gw_buf_init(&b);
    gw_buf_append(&b, data, len);
    gw_buf_append(&b, "", 1);
    free(data);
    char *id = strstr(b.data, "\"b3003\"");
    char *line = id;
    while (line > b.data && line[-1] != '\n')
        line--;
    uint64_t at = (uint64_t)(line - b.data);
    id[1] = 'x';
    b.len--;
    CHECK_EQ_U64(write_file(dir, "journal.jsonl", &b), 0);
    gw_buf_free(&b);
    struct gw_feed f;
    struct gw_feed_fault fault = {0};
    uint64_t last = 0;
    int rc;
    CHECK_EQ_U64(gw_feed_init(&f, dir), 0);
    gw_feed_durable(&f, 3006);
    struct trace t = {0};
    gw_buf_init(&t.text);
    CHECK_EQ_U64(gw_feed_read(&f, 3001, trace_visit, &t, NULL, &last, &fault), (uint64_t)-EBADMSG);
    CHECK_EQ_U64(fault.segment, 3001);
    CHECK_EQ_U64(fault.offset, at);
    CHECK_EQ_U64(fault.seq, 3003);
    gw_buf_free(&t.text);
    CHECK_EQ_STR(trace_read(&f, 3000, 0, 3002, &last, &rc), "E2@3001 R3001 R3002 ");
    CHECK_EQ_U64(rc, 0);
    gw_feed_active_segment(&f, 3001, at);
    CHECK_EQ_STR(trace_read(&f, 3001, 0, 0, &last, &rc), "R3002 ");
    CHECK_EQ_U64(rc, 0);
    gw_feed_active_segment(&f, 3001, UINT64_MAX);
    gw_feed_checked_from(&f, UINT64_MAX);
    CHECK_EQ_STR(trace_read(&f, 3001, 0, 3003, &last, &rc), "R3002 R3003 ");
    CHECK_EQ_U64(rc, 0);
    gw_feed_free(&f);
}

/* A receipt record of about `key_len` bytes (one placement with a key that long). */
static void long_record(struct gw_buf *b, uint64_t seq, size_t key_len)
{
    gw_buf_field_u64(b, "{\"type\":\"receipt\",\"seq\":", seq);
    gw_buf_puts(b, ",\"receipt\":{\"receipt_version\":1,\"batch_id\":\"long\",\"ring\":{},"
                   "\"placements\":[{\"id\":\"c\",\"key\":\"");
    for (size_t i = 0; i < key_len; i++)
        gw_buf_append(b, "abcdefghijklmnopqrstuvwxyz" + i % 26, 1);
    gw_buf_puts(b, "\",\"size\":1,\"hash\":1,\"point\":1,\"vnode\":1,\"shard\":\"s\","
                   "\"reason\":\"ring\"}],\"shards\":{}}}");
}

/* What a read of long receipts visits: "R<seq> " for a line held whole, "L<seq>@<offset> " for
 * a long one, whose record is read back in pieces and compared with `want`. */
struct long_trace {
    struct gw_buf text;
    const struct gw_buf *want;
    int piece_rc; /* the last piece read's code: its bytes or an error */
};

static int long_visit(void *ctx, const struct gw_feed_record *rec)
{
    struct long_trace *t = ctx;
    char item[64];
    if (rec->kind == GW_FEED_EPOCH)
        return 0;
    if (!rec->whole) {
        snprintf(item, sizeof(item), "R%llu ", (unsigned long long)rec->seq);
        gw_buf_puts(&t->text, item);
        return 0;
    }
    const struct gw_feed_long *l = rec->whole;
    snprintf(item, sizeof(item), "L%llu@%llu ", (unsigned long long)rec->seq,
             (unsigned long long)l->offset);
    gw_buf_puts(&t->text, item);
    CHECK_EQ_U64(rec->len, t->want->len);
    CHECK_EQ_U64(gw_feed_long_len(l), t->want->len);
    char *got = malloc(rec->len);
    unsigned long crc = gw_feed_long_crc_start();
    uint64_t at = 0;
    long n = 1;
    while (at < rec->len && (n = gw_feed_long_read(l, at, got + at, 100000, &crc)) > 0)
        at += (uint64_t)n; /* pieces of 100,000 bytes, the last one shorter */
    t->piece_rc = (int)n;
    CHECK_TRUE(n < 0 || memcmp(got, t->want->data, rec->len) == 0);
    free(got);
    return 0;
}

static const char *long_read(struct gw_feed *f, struct long_trace *t, uint64_t after, int *rc,
                             struct gw_feed_fault *fault)
{
    uint64_t last;
    gw_buf_reset(&t->text);
    *rc = gw_feed_read(f, after, long_visit, t, NULL, &last, fault);
    gw_buf_append(&t->text, "", 1);
    return t->text.data;
}

/* Receipt lines of more than GW_FEED_LONG_LINE bytes are met as long receipts: checked in pieces
 * (never held whole), their bytes read back exactly from the file; a byte changed is found
 * before the visit, or, changed after it, by the last piece read back; a long line past the
 * durable bytes, or unterminated, is not delivered; a segment written before checksums gives
 * the whole line. */
static void test_long(const char *dir)
{
    struct gw_buf file, want;
    gw_buf_init(&file);
    gw_buf_init(&want);
    put_line(&file, "{\"type\":\"segment\",\"first_seq\":1,\"prev\":\"00\"}");
    put_line(&file, "{\"type\":\"epoch\",\"epoch\":\"E1\"}");
    small_receipt(&file, 1);
    uint64_t at2 = file.len;
    long_record(&want, 2, 3u << 20);
    gw_buf_append(&file, want.data, want.len);
    gw_record_end(&file, at2);
    uint64_t end2 = file.len;
    small_receipt(&file, 3);
    long_record(&file, 4, 2u << 20); /* being written: no newline yet */
    CHECK_EQ_U64(write_file(dir, "journal.jsonl", &file), 0);
    struct gw_feed f;
    struct gw_feed_fault fault = {0};
    struct long_trace t = {.want = &want};
    int rc;
    gw_buf_init(&t.text);
    CHECK_EQ_U64(gw_feed_init(&f, dir), 0);
    gw_feed_durable(&f, 4);
    char expect[64];
    snprintf(expect, sizeof(expect), "R1 L2@%llu R3 ", (unsigned long long)at2);
    CHECK_EQ_STR(long_read(&f, &t, 0, &rc, &fault), expect);
    CHECK_EQ_U64(rc, 0);
    CHECK_TRUE(t.piece_rc > 0);
    gw_feed_active_segment(&f, 1, end2 - 1); /* its newline not yet synced */
    CHECK_EQ_STR(long_read(&f, &t, 1, &rc, &fault), "");
    gw_feed_active_segment(&f, 1, end2);
    snprintf(expect, sizeof(expect), "L2@%llu ", (unsigned long long)at2);
    CHECK_EQ_STR(long_read(&f, &t, 1, &rc, &fault), expect);
    /* One byte changed in the middle of the long line: found before anything of it is visited. */
    file.data[at2 + (2u << 20)] ^= 1;
    CHECK_EQ_U64(write_file(dir, "journal.jsonl", &file), 0);
    gw_feed_active_segment(&f, 1, UINT64_MAX);
    CHECK_EQ_STR(long_read(&f, &t, 1, &rc, &fault), "");
    CHECK_EQ_U64(rc, (uint64_t)-EBADMSG);
    CHECK_EQ_U64(fault.offset, at2);
    CHECK_EQ_U64(fault.seq, 2);
    /* Before checksums: the whole line is the record, read back as it is. */
    gw_feed_checked_from(&f, UINT64_MAX);
    gw_buf_reset(&want);
    gw_buf_append(&want, file.data + at2, end2 - at2 - 1);
    snprintf(expect, sizeof(expect), "L2@%llu R3 ", (unsigned long long)at2);
    CHECK_EQ_STR(long_read(&f, &t, 1, &rc, &fault), expect);
    CHECK_EQ_U64(rc, 0);
    CHECK_TRUE(t.piece_rc > 0);
    gw_feed_free(&f);
    gw_buf_free(&file);
    gw_buf_free(&want);
    gw_buf_free(&t.text);
}

/* A long receipt's bytes changed after its check: the piece that ends the record says so. */
static void test_long_changed(const char *dir)
{
    struct gw_buf line;
    gw_buf_init(&line);
    long_record(&line, 1, 2u << 20);
    gw_record_end(&line, 0);
    char path[4096];
    snprintf(path, sizeof(path), "%s/long.jsonl", dir);
    CHECK_EQ_U64(write_file(dir, "long.jsonl", &line), 0);
    FILE *fp = fopen(path, "r+b");
    CHECK_TRUE(fp != NULL);
    struct gw_feed_long l = {fileno(fp), 1,
                             0,          line.len - 1 - GW_RECORD_TAIL,
                             1,          gw_record_crc(line.data, line.len - 1 - GW_RECORD_TAIL)};
    char *buf = malloc(gw_feed_long_len(&l));
    unsigned long crc = gw_feed_long_crc_start();
    CHECK_EQ_U64(gw_feed_long_read(&l, 0, buf, 1u << 20, &crc), 1u << 20);
    fseek(fp, (long)(1u << 21), SEEK_SET); /* a byte not yet read back */
    fputc('!', fp);
    fflush(fp);
    CHECK_EQ_U64(gw_feed_long_read(&l, 1u << 20, buf + (1u << 20), 4u << 20, &crc),
                 (uint64_t)-EBADMSG);
    crc = gw_feed_long_crc_start();
    CHECK_EQ_U64(gw_feed_long_read(&l, 0, buf, 4u << 20, &crc), (uint64_t)-EBADMSG);
    free(buf);
    fclose(fp);
    gw_buf_free(&line);
}

int main(int argc, char **argv)
{
    src_dir = argc > 1 ? argv[1] : ".";
    char dir[] = "/tmp/shardgate-test-feed-XXXXXX";
    if (!mkdtemp(dir))
        return 2;
    test_placements_golden();
    test_placements_escapes();
    CHECK_EQ_U64(make_state(dir), 0);
    test_reads(dir);
    test_position(dir);
    test_rotation(dir);
    test_stale(dir);
    CHECK_EQ_U64(make_state(dir), 0);
    test_damage(dir);
    char sub[64];
    snprintf(sub, sizeof(sub), "%s/long", dir);
    CHECK_EQ_U64(mkdir(sub, 0700), 0);
    test_long(sub);
    test_long_changed(sub);
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        check_failures++;
    return CHECK_DONE();
}
