/* Where two compact JSON texts first differ, as a JSON path and the two values. */
/* E.g. `totals[1].shards[0].load`: for naming a checkpoint field health disagrees with. */
#ifndef HC_JSONDIFF_H
#define HC_JSONDIFF_H

#include <stddef.h>

struct hc_jsondiff {
    char path[160];
    char got[72];  /* the value in the first text (the file) */
    char want[72]; /* the value in the second text (recomputed) */
};

/* got[0..gn) and want[0..wn) are compact JSON texts; returns 0 when they are the same bytes,
 * else 1 with d filled. */
int hc_jsondiff(const char *got, size_t gn, const char *want, size_t wn, struct hc_jsondiff *d);

#endif
