/* If-Match on PUT /v1/admin/membership (docs/api.md §15), as RFC 9110 defines it: "*",
 * or a comma-separated list of entity tags, matched by strong comparison against the current
 * epoch's tag "<epoch>". Internal to http/. */
#ifndef SHARDGATE_GW_IF_MATCH_H
#define SHARDGATE_GW_IF_MATCH_H

#include "epoch.h"

/* The entity tag of an epoch, "<epoch>": the ETag answers send and If-Match names. */
void gw_epoch_etag(char out[GW_EPOCH_HEX_LEN + 3], const char *epoch);

/* 0 when `value` is "*" or a list of one or more entity tags (`"..."` or `W/"..."`, optional
 * whitespace around the commas, empty elements ignored); -1 otherwise. */
int gw_if_match_parse(const char *value);

/* 1 when a well-formed `value` matches `epoch`: "*", or a strong tag "<epoch>" in its list (a
 * weak tag never matches: If-Match compares strongly). */
int gw_if_match_matches(const char *value, const char *epoch);

#endif
