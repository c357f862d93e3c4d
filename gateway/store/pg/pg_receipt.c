/* The check of a receipt row read back (docs/journal.md §10): the bytes of its receipt hash to
 * the receipt_sha256 the gateway wrote in the same INSERT, and the receipt names the row's
 * batch_id. A row that fails it is never served (docs/operations.md §5.2). */
#include "pg_store.h"

#include <errno.h>
#include <string.h>

#include <openssl/evp.h>

#include "receipt.h"

void gw_pg_receipt_digest(const char *receipt, size_t len, char out[GW_PG_DIGEST_TEXT])
{
    unsigned char d[32];
    memset(d, 0, sizeof(d)); /* EVP_Digest fails only without memory: the row then fails */
    EVP_Digest(receipt, len, d, NULL, EVP_sha256(), NULL);
    memcpy(out, "\\x", 2);
    gw_hex_encode(d, sizeof(d), out + 2);
}

const char *gw_pg_receipt_damage(const char *batch_id, const char *receipt, size_t len,
                                 const char *digest_hex)
{
    char have[GW_PG_DIGEST_TEXT];
    gw_pg_receipt_digest(receipt, len, have);
    if (strlen(digest_hex) != GW_PG_DIGEST_TEXT - 3 || strcmp(have + 2, digest_hex) != 0)
        return "its receipt does not hash to its receipt_sha256";
    if (!gw_receipt_names_batch(receipt, len, batch_id, strlen(batch_id)))
        return "its receipt names another batch_id";
    return NULL;
}

int gw_pg_receipt_refused(const char *batch_id, const char *what, struct gw_error *err)
{
    gw_error_set(err, "",
                 "stored receipt damaged: the shardgate_receipts row of batch_id \"%.128s\": %s; "
                 "nothing of it is served (docs/operations.md §5.2)",
                 batch_id, what);
    return -EBADE;
}
