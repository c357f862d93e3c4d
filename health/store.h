/* A --store database verified as the journal it holds (docs/operations.md §1.7). */
#ifndef HC_STORE_H
#define HC_STORE_H

#include <stddef.h>

#include "error.h"
#include "journal.h"
#include "pg.h"
#include "text.h"

struct hc_store {
    const char *url;
    struct hc_pg pg;      /* kept open between reads (serve) */
    struct hc_journal *j; /* the reader the rebuilt journal goes through; its report gets all */
    struct hc_text text;  /* the rebuilt journal */
    struct hc_row_name *rows;
    size_t cap_rows;
    int verified;     /* the last hc_store_verify succeeded */
    char mark[3][24]; /* what it read: sequencer last_seq, highest epoch_seq, highest seq */
};

void hc_store_init(struct hc_store *st, const char *url, struct hc_journal *j);
void hc_store_free(struct hc_store *st);

/* Reads the database in one read-only snapshot, rebuilds its journal (epoch and receipt record
 * lines in journal order) and verifies it as hc_journal_update verifies a journal file, then
 * the facts only the database has (store_facts.h). Returns 0, or a negative code with err:
 * the store_read.h codes when it cannot be judged, -ENOMEM/-EIO/-E2BIG as the journal reader's.
 * After an error the journal's next update is a full one. */
int hc_store_verify(struct hc_store *st, struct hc_err *err);

/* serve: 1 when the database moved since the last verify (its sequencer, highest epoch_seq or
 * highest seq differ; or none succeeded), 0 when not, or a negative code with err. */
int hc_store_moved(struct hc_store *st, struct hc_err *err);

#endif
