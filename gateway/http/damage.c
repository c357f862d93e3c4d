/* A journal line or a database row that failed its check when read for an answer
 * (docs/journal.md §2.1, §10): counted, logged, and answered as an error, never as its bytes. */
#include <errno.h>
#include <stdio.h>

#include "log.h"
#include "request.h"

enum MHD_Result gw_serve_record_damage(struct gw_req *r, uint64_t segment, uint64_t offset,
                                       uint64_t seq, int rc)
{
    struct gw_server *s = r->srv;
    char file[GW_STORE_FILE_NAME_MAX], msg[400];
    gw_store_segment_file(s->store, segment, file);
    atomic_fetch_add(&s->metrics.record_damage, 1);
    struct gw_buf f;
    gw_buf_init(&f);
    gw_log_str(&f, "file", file);
    gw_log_u64(&f, "offset", offset);
    gw_log_u64(&f, "seq", seq);
    gw_log_str(&f, "what", gw_store_damage_what(s->store, rc));
    gw_log_event("record_checksum_failed", &f);
    snprintf(msg, sizeof(msg),
             "journal record damaged: seq %llu in %s (the line at offset %llu): %s; nothing of it "
             "is served (docs/operations.md §5.2)",
             (unsigned long long)seq, file, (unsigned long long)offset,
             gw_store_damage_what(s->store, rc));
    return gw_serve_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "record_corrupt", msg, "", NULL, NULL);
}

enum MHD_Result gw_serve_row_damage(struct gw_req *r, const char *msg)
{
    atomic_fetch_add(&r->srv->metrics.row_damage, 1); /* not /readyz's: docs/journal.md §10 */
    struct gw_buf f;
    gw_buf_init(&f);
    gw_log_str(&f, "table", "shardgate_receipts");
    gw_log_str(&f, "message", msg);
    gw_log_event("record_checksum_failed", &f);
    return gw_serve_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "record_corrupt", msg, "", NULL, NULL);
}

enum MHD_Result gw_serve_index_mismatch(struct gw_req *r, const char *id,
                                        const struct gw_store_miss *miss)
{
    char file[GW_STORE_FILE_NAME_MAX], msg[600];
    gw_store_segment_file(r->srv->store, miss->segment, file);
    struct gw_buf f;
    gw_buf_init(&f);
    gw_log_str(&f, "batch_id", id);
    gw_log_str(&f, "file", file);
    gw_log_u64(&f, "offset", miss->line);
    gw_log_u64(&f, "seq", miss->seq);
    gw_log_event("index_mismatch", &f);
    snprintf(msg, sizeof(msg),
             "idempotency index: it places batch_id \"%.128s\" at seq %llu in %s (the line at "
             "offset %llu), whose record is another batch's; nothing of it is served. Stop the "
             "server and remove the state dir's index/ directory: the next start rebuilds it from "
             "the journal (docs/journal.md §9)",
             id, (unsigned long long)miss->seq, file, (unsigned long long)miss->line);
    return gw_serve_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "index_corrupt", msg, "", NULL, NULL);
}
