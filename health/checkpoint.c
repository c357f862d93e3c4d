/* Checkpoint files: loaded and hashed first, compared at their position in the journal. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "jsondiff.h"
#include "state_dir.h"

#define HC_CKPT_MAX (64u << 20)
static const char hc_sha_key[] = ",\"sha256\":\"";

/* Finds the sha256 member at the end ("<64 hex>"}\n) and checks it; 0 or an issue. */
static int hc_ckpt_sha(struct hc_ckpt *c, size_t len, struct hc_digest *sha256,
                       struct hc_report *rep, int slot)
{
    size_t tail = sizeof hc_sha_key - 1 + 64 + 3;
    if (len < tail || memcmp(c->text + len - 3, "\"}\n", 3) != 0 ||
        memcmp(c->text + len - tail, hc_sha_key, sizeof hc_sha_key - 1) != 0 ||
        memchr(c->text, '\n', len - 1) != NULL) {
        hc_report_issue(rep, slot, "journal_checkpoint", c->name,
                        "sha256: not one line ending in ,\"sha256\":\"<64 hex>\"}");
        return -1;
    }
    c->head_len = len - tail;
    unsigned char md[HC_DIGEST_MAX];
    char hex[65];
    if (hc_digest_once(sha256, c->text, c->head_len, md) != 0)
        return -EIO;
    hc_hex(md, 32, hex);
    if (memcmp(hex, c->text + c->head_len + sizeof hc_sha_key - 1, 64) != 0) {
        hc_report_issue(rep, slot, "journal_checkpoint", c->name,
                        "sha256: %.64s != %s (the SHA-256 of its bytes before ,\"sha256\")",
                        c->text + c->head_len + sizeof hc_sha_key - 1, hex);
        return -1;
    }
    return 0;
}

/* Parses the head keys (type, version, last_seq, segment, offset, index_seq, epochs...). */
static int hc_ckpt_head(struct hc_ckpt *c, struct hc_report *rep, int slot)
{
    unsigned long long l, f, o, i;
    int end = -1;
    char probe[160];
    snprintf(probe, sizeof probe, "%.*s", (int)(c->head_len < 159 ? c->head_len : 159), c->text);
    sscanf(probe,
           "{\"type\":\"checkpoint\",\"version\":1,\"last_seq\":%20llu,\"segment\":%20llu,"
           "\"offset\":%20llu,\"index_seq\":%20llu,\"epochs\":%n",
           &l, &f, &o, &i, &end);
    if (end < 0) {
        hc_report_issue(rep, slot, "journal_checkpoint", c->name,
                        "keys: not {\"type\":\"checkpoint\",\"version\":1,\"last_seq\",\"segment\","
                        "\"offset\",\"index_seq\",\"epochs\",\"ledger\",\"totals\",\"sha256\"}");
        return -1;
    }
    c->last_seq = l;
    c->segment = f;
    c->offset = o;
    c->index_seq = i;
    uint64_t named = strtoull(c->name + 11, NULL, 10);
    if (named != l) {
        hc_report_issue(rep, slot, "journal_checkpoint", c->name,
                        "last_seq: %llu != %" PRIu64 " (the name's)", l, named);
        return -1;
    }
    if (i < l) {
        hc_report_issue(rep, slot, "journal_checkpoint", c->name, "index_seq: %llu < last_seq %llu",
                        i, l);
        return -1;
    }
    return 0;
}

int hc_ckpt_load(const char *dir, const char *name, struct hc_digest *sha256, struct hc_ckpt *c,
                 struct hc_report *rep, int slot, struct hc_err *err)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    size_t len = 0;
    struct hc_err why;
    int rc = hc_state_dir_read(dir, name, HC_CKPT_MAX, &c->text, &len, &why);
    if (rc == -ENOMEM)
        return hc_err_set(err, rc, "out of memory");
    if (rc == -ENOENT)
        return 0; /* listed, then gone: a running gateway prunes a checkpoint once a newer one
                     is durable (docs/journal.md §7); unusable, and no issue: it is derived */
    if (rc != 0) {
        hc_report_issue(rep, slot, "journal_checkpoint", name, "%s", why.msg);
        return 0;
    }
    rc = hc_ckpt_sha(c, len, sha256, rep, slot);
    if (rc == -EIO)
        return hc_err_set(err, rc, "digest failed");
    c->usable = rc == 0 && hc_ckpt_head(c, rep, slot) == 0;
    return 0;
}

int hc_ckpt_compare(struct hc_ckpt *c, int64_t last_seq, const struct hc_totals *t,
                    struct hc_epoch *const *epochs, size_t n, int sums, struct hc_report *rep,
                    int slot)
{
    c->reached = 1;
    rep->checks++;
    rep->evals[slot]++;
    if ((uint64_t)last_seq != c->last_seq) {
        hc_report_issue(rep, slot, "journal_checkpoint", c->name,
                        "segment/offset: %" PRIu64 "/%" PRIu64
                        " follows the receipt with seq %" PRId64 ", not last_seq %" PRIu64,
                        c->segment, c->offset, last_seq, c->last_seq);
        return 0;
    }
    if (!sums)
        return 0;
    struct hc_text want = {0};
    int rc =
        hc_text_printf(&want,
                       "{\"type\":\"checkpoint\",\"version\":1,\"last_seq\":%" PRIu64
                       ",\"segment\":%" PRIu64 ",\"offset\":%" PRIu64 ",\"index_seq\":%" PRIu64 ",",
                       c->last_seq, c->segment, c->offset, c->index_seq);
    rc = rc ? rc : hc_totals_render(t, epochs, n, &want);
    struct hc_jsondiff d;
    if (rc == 0 && hc_jsondiff(c->text, c->head_len, want.p, want.n, &d))
        hc_report_issue(rep, slot, "journal_checkpoint", c->name, "%s: %s != %s", d.path, d.got,
                        d.want);
    hc_text_free(&want);
    return rc;
}

void hc_ckpt_free(struct hc_ckpt *c)
{
    free(c->text);
    c->text = NULL;
}
