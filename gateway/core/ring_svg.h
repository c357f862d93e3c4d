/* The ring drawn as SVG (docs/tools.md §1.3): the circle of the 2^32 hash values, clockwise
 * from the top, as arcs coloured by the shard that owns them; and, between two memberships,
 * the arcs that would move. One drawing for `shardgate ring --svg`, `shardgate plan --svg`,
 * GET /v1/ring?format=svg and the dry run's (docs/api.md §5, §15). */
#ifndef SHARDGATE_GW_RING_SVG_H
#define SHARDGATE_GW_RING_SVG_H

#include "buf.h"
#include "topology.h"

/* Above this many runs a ring is drawn sampled: GW_SVG_BINS equal bins, each coloured by the
 * shard owning its middle hash (a 10,000-shard ring has 1.6M runs: no page draws that). */
#define GW_SVG_MAX_ARCS 4096
#define GW_SVG_BINS 1024

/* The ring of `t`: one arc per run of consecutive points of one shard (a point owns the hashes
 * after the point before it up to itself), or the sampled bins. */
void gw_ring_svg(struct gw_buf *out, const struct gw_topology *t);

/* The ring of `from`, and around it the hash ranges whose owner in `to` differs, coloured by
 * their new owner (or, past GW_SVG_MAX_ARCS ranges, GW_SVG_BINS bins shaded by the share of
 * each that moves). Returns 0, -ENOENT when either ring has no point, or -ENOMEM. */
int gw_ring_svg_moves(struct gw_buf *out, const struct gw_topology *from,
                      const struct gw_topology *to);

#endif
