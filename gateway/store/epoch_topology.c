/* An epoch's contract and membership as the store holds them in its record (docs/journal.md §2),
 * for what is derived from two epochs on demand (docs/decisions.md §61). */
#include "store.h"

#include <errno.h>
#include <jansson.h>

#include "records.h"

int gw_store_epoch_topology(struct gw_store *s, const struct gw_epoch_entry *e,
                            struct gw_topology *out, struct gw_error *err)
{
    struct gw_buf line;
    gw_buf_init(&line);
    int rc = gw_store_epoch_record(s, e, &line, err);
    if (rc == -ENOENT)
        gw_error_set(err, "",
                     "the record of epoch_seq %llu is no longer in the store (an archived "
                     "segment)",
                     (unsigned long long)e->epoch_seq);
    json_t *root = NULL;
    if (rc == 0) {
        json_error_t jerr;
        root = json_loadb(line.data, line.len, JSON_REJECT_DUPLICATES, &jerr);
        rc = root ? 0 : -EINVAL;
        if (!root)
            gw_error_set(err, "", "the record of epoch_seq %llu is not JSON",
                         (unsigned long long)e->epoch_seq);
    }
    gw_buf_free(&line);
    struct gw_contract c;
    struct gw_membership m;
    struct gw_epoch_entry ids;
    if (rc == 0 && (rc = gw_epoch_record_read(root, &c, &m, &ids, err)) == 0)
        rc = gw_topology_build(&c, &m, out, err);
    json_decref(root);
    return rc;
}
