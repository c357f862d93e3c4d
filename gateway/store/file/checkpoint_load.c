/* Reading a checkpoint back (docs/journal.md §7): its sha256 first (a torn or edited file is
 * refused), then its JSON and its position against the journal's segments; then putting it into
 * the journal's chain and the ledger. */
#include "checkpoint.h"
#include "line_check.h"
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHA_TAIL (sizeof(",\"sha256\":\"") - 1 + GW_SHA256_HEX + 3) /* ...hex"}\n */
#define CHECKPOINT_MAX (1ull << 30)

static int why(struct gw_error *err, const char *what)
{
    gw_error_set(err, "", "%s", what);
    return -EINVAL;
}

/* Reads the whole file; checks that it is one line ending with the sha256 of what precedes. */
static int read_checked(const char *path, char **data, size_t *len, struct gw_error *err)
{
    int fd = gw_io.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return why(err, "cannot be read");
    }
    *len = (size_t)st.st_size;
    *data = *len <= CHECKPOINT_MAX ? malloc(*len + 1) : NULL;
    int rc = *data && pread(fd, *data, *len, 0) == (ssize_t)*len ? 0 : -EIO;
    close(fd);
    if (rc != 0)
        return why(err, "cannot be read");
    (*data)[*len] = '\0';
    const char *tail = *data + *len - SHA_TAIL;
    if (*len < SHA_TAIL + 2 || memcmp(tail, ",\"sha256\":\"", 11) != 0 ||
        memcmp(*data + *len - 3, "\"}\n", 3) != 0 || memchr(*data, '\n', *len - 1))
        return why(err, "not one line ending with its sha256 (torn)");
    unsigned char d[EVP_MAX_MD_SIZE];
    char hex[2 * EVP_MAX_MD_SIZE + 1];
    unsigned n = 0;
    EVP_Digest(*data, (size_t)(tail - *data), d, &n, EVP_sha256(), NULL);
    for (unsigned i = 0; i < n; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    if (memcmp(hex, tail + 11, GW_SHA256_HEX) != 0)
        return why(err, "sha256 does not match its bytes (torn or edited)");
    return 0;
}

static int get_u64(json_t *o, const char *key, uint64_t *v)
{
    json_t *x = json_object_get(o, key);
    if (!json_is_integer(x) || json_integer_value(x) < 0)
        return -EINVAL;
    *v = (uint64_t)json_integer_value(x);
    return 0;
}

static int copy_hex(json_t *x, char *out, size_t max, int nullable)
{
    if (nullable && json_is_null(x)) {
        out[0] = '\0';
        return 0;
    }
    if (!json_is_string(x) || json_string_length(x) > max)
        return -EINVAL;
    memcpy(out, json_string_value(x), json_string_length(x) + 1);
    return 0;
}

static int parse_epoch(json_t *o, struct gw_epoch_entry *e)
{
    memset(e, 0, sizeof(*e));
    if (copy_hex(json_object_get(o, "epoch"), e->epoch, GW_EPOCH_HEX_LEN, 0) ||
        copy_hex(json_object_get(o, "ring"), e->ring_id, GW_EPOCH_HEX_LEN, 0) ||
        copy_hex(json_object_get(o, "prev"), e->prev, GW_EPOCH_HEX_LEN, 1) ||
        copy_hex(json_object_get(o, "time"), e->time, GW_EPOCH_TIME_LEN, 1) ||
        get_u64(o, "epoch_seq", &e->epoch_seq) || get_u64(o, "first_seq", &e->first_seq) ||
        !json_is_string(json_object_get(o, "source")) ||
        gw_source_parse(json_string_value(json_object_get(o, "source")), &e->source) != 0)
        return -EINVAL;
    return 0;
}

static int parse(json_t *root, struct gw_checkpoint *c, struct gw_error *err)
{
    json_t *epochs = json_object_get(root, "epochs");
    const char *type = json_string_value(json_object_get(root, "type"));
    uint64_t version = 0;
    if (!type || strcmp(type, "checkpoint") != 0 || get_u64(root, "version", &version) ||
        version != 1 || get_u64(root, "last_seq", &c->last_seq) ||
        get_u64(root, "segment", &c->segment) || get_u64(root, "offset", &c->offset) ||
        get_u64(root, "index_seq", &c->index_seq) || !json_is_array(epochs) ||
        !json_is_array(json_object_get(root, "ledger")) ||
        !json_is_array(json_object_get(root, "totals")))
        return why(err, "a key is missing or of the wrong type");
    if (c->index_seq < c->last_seq)
        return why(err, "index_seq is before last_seq");
    c->epoch_count = json_array_size(epochs);
    c->epochs = calloc(c->epoch_count ? c->epoch_count : 1, sizeof(*c->epochs));
    if (!c->epochs)
        return -ENOMEM;
    for (size_t i = 0; i < c->epoch_count; i++)
        if (parse_epoch(json_array_get(epochs, i), &c->epochs[i]) != 0)
            return why(err, "an epochs entry is not as GET /v1/epochs lists it");
    if (c->epoch_count == 0)
        return why(err, "no epoch");
    return 0;
}

/* Walks back from the checkpoint's offset over the epoch records that follow its last receipt
 * (an epoch record is the last record of a group of its own, or a PUT or SIGHUP just before a
 * shutdown): c->resume_offset is set just after that receipt (or after the segment's header
 * and repeat, or at 0 in the first segment, when the segment holds no receipt yet), and
 * c->resume_epochs to the number of epoch records in between. Returns NULL or why the position
 * is not usable. */
static const char *find_resume(const char *data, struct gw_checkpoint *c, int checked)
{
    char want[64];
    int w = snprintf(want, sizeof(want), "{\"type\":\"receipt\",\"seq\":%" PRIu64 ",", c->last_seq);
    uint64_t end = c->offset, after = c->offset; /* the ends of the line looked at and the next */
    c->resume_epochs = 0;
    for (;;) {
        if (end == 0) { /* the first segment's start: no header, no repeat */
            c->resume_offset = 0;
            return c->segment == 1 && c->last_seq < c->segment
                       ? NULL
                       : "no receipt record before its offset";
        }
        uint64_t at = end - 1;
        while (at > 0 && data[at - 1] != '\n')
            at--;
        const char *l = data + at;
        size_t n = (size_t)(end - 1 - at);
        size_t body;
        if (checked && gw_record_check(l, n, &body) != 0)
            return "the line before its offset fails its checksum (docs/journal.md §2.1)";
        if (n >= 17 && memcmp(l, "{\"type\":\"receipt\"", 17) == 0) {
            c->resume_offset = end;
            return n >= (size_t)w && memcmp(l, want, (size_t)w) == 0
                       ? NULL
                       : "the record before its offset is not the receipt with its last_seq";
        }
        if (n >= 17 && memcmp(l, "{\"type\":\"segment\"", 17) == 0) {
            if (at != 0 || c->resume_epochs == 0 || c->last_seq >= c->segment)
                return "no receipt record before its offset";
            c->resume_epochs--; /* the line after the header is the repeat, not a new record */
            c->resume_offset = after;
            return NULL;
        }
        c->resume_epochs++;
        after = end;
        end = at;
    }
}

/* The position lands at a line start, just after the record with seq last_seq and the epoch
 * records after it (or after the header, repeat and epoch records when the group had no
 * receipt). */
static int check_position(struct gw_journal *j, struct gw_checkpoint *c, struct gw_error *err)
{
    const struct gw_segment *archived = gw_segments_archived(&j->segs, c->segment);
    if (archived) { /* docs/journal.md §8: usable only when it ends exactly at that segment's end */
        c->resume_offset = c->offset;
        if (archived->last_seq == c->last_seq && gw_segment_seal_at(archived, c->offset))
            return 0;
        why(err, "its segment is archived and it does not end at that segment's end");
        return -ESTALE;
    }
    if (!gw_journal_has_segment(j, c->segment))
        return why(err, "its segment is not in the state dir");
    char *path = gw_journal_segment_path(j, c->segment);
    int fd = path ? gw_io.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0) : -1;
    free(path);
    struct stat st;
    void *map = MAP_FAILED;
    if (fd >= 0 && fstat(fd, &st) == 0 && c->offset > 0 && c->offset <= (uint64_t)st.st_size)
        map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (fd >= 0)
        close(fd);
    const char *data = map;
    const char *what = map == MAP_FAILED || data[c->offset - 1] != '\n'
                           ? "its offset is not at a line start within its segment"
                           : find_resume(data, c, c->segment >= j->checked_from);
    if (map != MAP_FAILED)
        munmap(map, (size_t)st.st_size);
    return what ? why(err, what) : 0;
}

int gw_checkpoint_load(const char *dir, uint64_t last_seq, struct gw_journal *j,
                       struct gw_checkpoint *out, struct gw_error *err)
{
    char path[4096], name[GW_CHECKPOINT_NAME_MAX];
    memset(out, 0, sizeof(*out));
    gw_checkpoint_name(name, last_seq);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    char *data = NULL;
    size_t len = 0;
    json_error_t jerr;
    int rc = read_checked(path, &data, &len, err);
    json_t *root = rc == 0 ? json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr) : NULL;
    free(data);
    if (rc == 0 && !root)
        rc = why(err, "not JSON (or a total beyond 2^63 - 1: then a full replay)");
    out->json = root;
    if (rc == 0)
        rc = parse(root, out, err);
    if (rc == 0 && out->last_seq != last_seq)
        rc = why(err, "its last_seq is not the one of its name");
    if (rc == 0)
        rc = check_position(j, out, err);
    if (rc != 0)
        gw_checkpoint_free(out);
    return rc;
}

void gw_checkpoint_free(struct gw_checkpoint *c)
{
    free(c->epochs);
    json_decref(c->json);
    memset(c, 0, sizeof(*c));
}

/* One ledger entry of the checkpoint. */
static int apply_shard(struct gw_ledger *l, json_t *o)
{
    struct gw_ledger_entry e;
    uint64_t weight, capacity, load, received;
    json_t *id = json_object_get(o, "id");
    memset(&e, 0, sizeof(e));
    if (!json_is_string(id) || json_string_length(id) == 0 ||
        json_string_length(id) > GW_SHARD_ID_MAX || get_u64(o, "weight", &weight) ||
        weight > UINT32_MAX || get_u64(o, "capacity", &capacity) || get_u64(o, "load", &load) ||
        get_u64(o, "received", &received))
        return -EINVAL;
    e.id_len = json_string_length(id);
    memcpy(e.id, json_string_value(id), e.id_len);
    e.weight = (uint32_t)weight;
    e.capacity = capacity;
    e.total.load = load;
    e.total.received = received;
    return gw_ledger_restore(l, &e);
}

static int apply_totals(struct gw_ledger *l, json_t *epoch)
{
    uint64_t seq, load, received;
    json_t *shards = json_object_get(epoch, "shards"), *s;
    size_t i;
    if (get_u64(epoch, "epoch_seq", &seq) || !json_is_array(shards))
        return -EINVAL;
    json_array_foreach(shards, i, s)
    {
        json_t *id = json_object_get(s, "id");
        if (!json_is_string(id) || get_u64(s, "load", &load) || get_u64(s, "received", &received))
            return -EINVAL;
        struct gw_total t = {load, received};
        int rc = gw_ledger_restore_epoch(l, seq, json_string_value(id), json_string_length(id), &t);
        if (rc != 0)
            return rc == -ENOENT ? -EINVAL : rc;
    }
    return 0;
}

int gw_checkpoint_apply(const struct gw_checkpoint *c, struct gw_journal *j, struct gw_ledger *l,
                        struct gw_error *err)
{
    size_t i;
    int rc = 0;
    /* The epoch records between the last receipt and the offset are read again by the replay
     * (docs/journal.md §7), so their entries are left for it to append. */
    if (c->resume_epochs > c->epoch_count)
        rc = -EINVAL;
    for (i = 0; rc == 0 && i < c->epoch_count - c->resume_epochs; i++)
        rc = gw_chain_append(&j->chain, &c->epochs[i]);
    json_t *ledger = json_object_get(c->json, "ledger"),
           *totals = json_object_get(c->json, "totals");
    for (i = 0; rc == 0 && i < json_array_size(ledger); i++)
        rc = apply_shard(l, json_array_get(ledger, i));
    for (i = 0; rc == 0 && i < json_array_size(totals); i++)
        rc = apply_totals(l, json_array_get(totals, i));
    j->last_seq = c->last_seq;
    if (rc == -ENOMEM)
        gw_error_set(err, "", "checkpoint: out of memory");
    else if (rc != 0)
        gw_error_set(err, "", "a ledger or totals entry is not valid");
    return rc;
}
