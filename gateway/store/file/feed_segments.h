/* The segment files of a state dir as the feed sees them (docs/journal.md §6): the
 * sealed `journal-<20-digit first_seq>.jsonl` in first_seq order, then the active
 * `journal.jsonl`. */
#ifndef SHARDGATE_GW_FEED_SEGMENTS_H
#define SHARDGATE_GW_FEED_SEGMENTS_H

#include <stddef.h>
#include <stdint.h>

struct gw_feed_segment {
    uint64_t first_seq;
    int active; /* 1: journal.jsonl */
};

struct gw_feed_segments {
    struct gw_feed_segment *list; /* first_seq order, the active one last */
    size_t count;
};

/* Lists `dir`'s segments; the active one's first_seq is read from its header line (1 without
 * one: the first segment). Returns 0, -ENOMEM or -errno of the directory. */
int gw_feed_segments_list(const char *dir, struct gw_feed_segments *out);
void gw_feed_segments_free(struct gw_feed_segments *s);
/* A copy of `from` into `out`: 0 or -ENOMEM. */
int gw_feed_segments_copy(const struct gw_feed_segments *from, struct gw_feed_segments *out);

/* Writes the file name of segment `s` into out (size >= 64). */
void gw_feed_segment_name(const struct gw_feed_segment *s, char *out, size_t size);

/* The seq in `line` after `prefix` (a run of digits), or 0 when the line does not start so. */
uint64_t gw_feed_number_after(const char *line, size_t len, const char *prefix);

#endif
