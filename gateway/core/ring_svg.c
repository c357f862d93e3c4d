/* The ring drawn as SVG (docs/tools.md §1.3). */
#include "ring_svg.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fnv.h"
#include "walk.h"

#define HASHES RING_HASHES
#define BIN_LEN (HASHES / GW_SVG_BINS)
#define WIDTH 960
#define HEIGHT 680
#define CX 320.0
#define CY 345.0
#define RING_R 240.0 /* the ring's arcs */
#define MOVE_R 284.0 /* the moves around it */
#define LEGEND_MAX 24
#define TAU 6.283185307179586476925 /* 2 pi: M_PI is not C11 */

/* One run: `len` hash values from `start` (wrapping past 2^32 - 1) owned by `shard`. */
typedef void (*run_fn)(void *ctx, uint32_t start, uint64_t len, uint32_t shard);

/* The first hash value of a Maglev slot when its M slots are drawn around the circle. */
static uint64_t slot_start(uint64_t slot, uint64_t m)
{
    return (slot << 32) / m;
}

/* A Maglev ring drawn as its table's slots around the circle: `fn` for each run of
 * consecutive slots of one shard (docs/tools.md §1.3). */
static size_t table_runs(const struct ring *ring, run_fn fn, void *ctx)
{
    const uint32_t *table = ring_table(ring);
    uint64_t m = ring_table_size(ring);
    size_t runs = 0;
    for (uint64_t s = 0, start = 0; table && s < m; s++)
        if (s + 1 == m || table[s + 1] != table[s]) {
            fn(ctx, (uint32_t)slot_start(start, m), slot_start(s + 1, m) - slot_start(start, m),
               table[s]);
            runs++;
            start = s + 1;
        }
    return runs;
}

/* The shard that owns hash value `v` as drawn. */
static uint32_t owner_at(const struct ring *ring, uint32_t v)
{
    struct ring_placement at = {0};
    if (ring_algorithm_of(ring) != RING_KETAMA)
        return ring_table(ring)[((uint64_t)v * ring_table_size(ring)) >> 32];
    ring_lookup_hash(ring, v, &at);
    return at.shard;
}

/* Calls `fn` for each run of consecutive points of one shard, in ring order from a run's
 * start, skipping points that own nothing (a point equal to the one before it). Returns the
 * number of runs. */
static size_t ring_runs(const struct ring *ring, run_fn fn, void *ctx)
{
    if (ring_algorithm_of(ring) != RING_KETAMA)
        return table_runs(ring, fn, ctx);
    const struct ring_point *p = ring_points(ring);
    size_t n = ring_points_total(ring), first = n;
    uint32_t prev = UINT32_MAX;
    for (size_t i = 0; i < n; i++) /* the owner of the last arc that owns something */
        if (ring_point_owns(p, n, i) > 0)
            prev = p[i].shard;
    for (size_t i = 0; i < n && first == n; i++) /* the first arc whose owner changes */
        if (ring_point_owns(p, n, i) > 0 && p[i].shard != prev)
            first = i;
    if (first == n) { /* one shard owns the circle */
        if (n > 0)
            fn(ctx, 0, HASHES, p[0].shard);
        return n > 0;
    }
    size_t runs = 0;
    uint64_t run_start = (uint64_t)p[(first + n - 1) % n].value + 1, run_len = 0;
    uint32_t owner = p[first].shard;
    for (size_t k = 0; k < n; k++) {
        size_t i = (first + k) % n;
        uint64_t len = ring_point_owns(p, n, i);
        if (len == 0)
            continue;
        if (p[i].shard != owner) {
            fn(ctx, (uint32_t)run_start, run_len, owner);
            runs++;
            run_start = (run_start + run_len) % HASHES;
            run_len = 0;
            owner = p[i].shard;
        }
        run_len += len;
    }
    fn(ctx, (uint32_t)run_start, run_len, owner);
    return runs + 1;
}

/* A shard's colour: its hue from the FNV-1a of its id, so a shard keeps its colour in every
 * drawing, whatever the others are. */
static void put_colour(struct gw_buf *b, const char *id, size_t len)
{
    uint64_t h = gw_fnv1a(id, len);
    gw_buf_printf(b, "hsl(%u,%u%%,%u%%)", (unsigned)(h % 360), 55 + (unsigned)(h >> 20) % 3 * 15,
                  38 + (unsigned)(h >> 40) % 3 * 10);
}

static void polar(double value, double r, double *x, double *y)
{
    double a = value / (double)HASHES * TAU;
    *x = CX + r * sin(a);
    *y = CY - r * cos(a);
}

/* An arc path of `len` values from `start` on radius r, clockwise; the whole circle as two
 * halves (one SVG arc cannot start and end at the same point). */
static void put_path(struct gw_buf *b, uint32_t start, uint64_t len, double r)
{
    double x0, y0, x1, y1;
    polar((double)start, r, &x0, &y0);
    if (len >= HASHES) {
        polar((double)start + HASHES / 2.0, r, &x1, &y1);
        gw_buf_printf(b, "M%.3f %.3fA%.1f %.1f 0 0 1 %.3f %.3fA%.1f %.1f 0 0 1 %.3f %.3f", x0, y0,
                      r, r, x1, y1, r, r, x0, y0);
        return;
    }
    polar((double)start + (double)len, r, &x1, &y1);
    gw_buf_printf(b, "M%.3f %.3fA%.1f %.1f 0 %d 1 %.3f %.3f", x0, y0, r, r, len > HASHES / 2, x1,
                  y1);
}

/* <path class="CLASS" data-shard data-start data-len d stroke><title>…</title></path> */
static void put_arc(struct gw_buf *b, const char *cls, const struct ring *ring, uint32_t shard,
                    uint32_t start, uint64_t len, double r)
{
    const char *id = ring_shard_id(ring, shard);
    size_t id_len = ring_shard_id_len(ring, shard);
    gw_buf_printf(b, "<path class=\"%s\" data-shard=\"", cls);
    gw_buf_append(b, id, id_len);
    gw_buf_printf(b, "\" data-start=\"%u\" data-len=\"%llu\" d=\"", start, (unsigned long long)len);
    put_path(b, start, len, r);
    gw_buf_puts(b, "\" stroke=\"");
    put_colour(b, id, id_len);
    gw_buf_puts(b, "\"><title>");
    gw_buf_append(b, id, id_len);
    gw_buf_printf(b, ": %llu hashes from %u</title></path>\n", (unsigned long long)len, start);
}

/* The runs of one walk, kept to be drawn after it once their count is known to be at most
 * GW_SVG_MAX_ARCS: one walk over the ring, not one to count and one to draw. */
struct run_list {
    struct kept_run {
        uint32_t start, shard;
        uint64_t len;
    } * items;    /* GW_SVG_MAX_ARCS of them */
    size_t count; /* every run met, kept or not */
};

static void keep_run(struct run_list *l, uint32_t start, uint64_t len, uint32_t shard)
{
    if (l->count < GW_SVG_MAX_ARCS)
        l->items[l->count] = (struct kept_run){start, shard, len};
    l->count++;
}

static void put_runs(struct gw_buf *b, const char *cls, const struct ring *ring,
                     const struct run_list *l, double r)
{
    for (size_t i = 0; i < l->count && i < GW_SVG_MAX_ARCS; i++)
        put_arc(b, cls, ring, l->items[i].shard, l->items[i].start, l->items[i].len, r);
}

struct draw {
    struct run_list runs;
    uint64_t *owned; /* per ring shard */
};

static void draw_run(void *ctx, uint32_t start, uint64_t len, uint32_t shard)
{
    struct draw *d = ctx;
    keep_run(&d->runs, start, len, shard);
    d->owned[shard] += len;
}

/* Sampled: each bin coloured by the owner of its middle hash, neighbours of one owner merged. */
static void draw_bins(struct gw_buf *b, const struct ring *ring)
{
    uint32_t owner = 0;
    uint64_t start = 0;
    for (uint64_t bin = 0; bin <= GW_SVG_BINS; bin++) {
        uint32_t at =
            bin < GW_SVG_BINS ? owner_at(ring, (uint32_t)(bin * BIN_LEN + BIN_LEN / 2)) : 0;
        if (bin > 0 && (bin == GW_SVG_BINS || at != owner)) {
            put_arc(b, "bin", ring, owner, (uint32_t)start, bin * BIN_LEN - start, RING_R);
            start = bin * BIN_LEN;
        }
        owner = at;
    }
}

static void put_head(struct gw_buf *b, const struct gw_topology *t)
{
    gw_buf_printf(b,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" width=\"%d\" "
                  "height=\"%d\" font-family=\"sans-serif\" font-size=\"13\" class=\"ring\" "
                  "data-ring=\"%s\" data-epoch=\"%s\">\n",
                  WIDTH, HEIGHT, WIDTH, HEIGHT, ring_id(t->ring), t->epoch);
}

/* The legend: the first LEGEND_MAX shards in id order with their share of the hash space. */
static void put_legend(struct gw_buf *b, const struct ring *ring, const uint64_t *owned)
{
    size_t n = ring_shard_count(ring);
    double y = 64;
    for (uint32_t s = 0; s < n && s < LEGEND_MAX; s++, y += 22) {
        const char *id = ring_shard_id(ring, s);
        size_t len = ring_shard_id_len(ring, s);
        gw_buf_puts(b, "<g class=\"legend\" data-shard=\"");
        gw_buf_append(b, id, len);
        gw_buf_printf(b,
                      "\" data-owned=\"%llu\"><rect x=\"640\" y=\"%.0f\" width=\"14\" "
                      "height=\"14\" fill=\"",
                      (unsigned long long)owned[s], y);
        put_colour(b, id, len);
        gw_buf_printf(b, "\"/><text x=\"662\" y=\"%.0f\">", y + 12);
        gw_buf_append(b, id, len);
        gw_buf_printf(b, " %.3f%%</text></g>\n", 100.0 * (double)owned[s] / (double)HASHES);
    }
    if (n > LEGEND_MAX)
        gw_buf_printf(b, "<text x=\"640\" y=\"%.0f\">and %zu more shards</text>\n", y + 12,
                      n - LEGEND_MAX);
}

/* The shards of `to` that `from` lacks, under the legend: where new owners' colours are named. */
static void put_new_shards(struct gw_buf *b, const struct ring *to, const uint32_t *same,
                           size_t shown)
{
    double y = 64 + 22.0 * (double)(shown < LEGEND_MAX ? shown : LEGEND_MAX + 1) + 10;
    for (uint32_t s = 0, n = 0; s < ring_shard_count(to) && n < LEGEND_MAX; s++) {
        if (same[s] != UINT32_MAX)
            continue;
        const char *id = ring_shard_id(to, s);
        size_t len = ring_shard_id_len(to, s);
        gw_buf_puts(b, "<g class=\"legend-new\" data-shard=\"");
        gw_buf_append(b, id, len);
        gw_buf_printf(b, "\"><rect x=\"640\" y=\"%.0f\" width=\"14\" height=\"14\" fill=\"", y);
        put_colour(b, id, len);
        gw_buf_printf(b, "\"/><text x=\"662\" y=\"%.0f\">", y + 12);
        gw_buf_append(b, id, len);
        gw_buf_puts(b, " (new)</text></g>\n");
        y += 22;
        n++;
    }
}

/* The ring's arcs (or bins), its caption and legend; no closing tag. */
static int put_ring(struct gw_buf *b, const struct gw_topology *t)
{
    const struct ring *ring = t->ring;
    struct draw d = {{calloc(GW_SVG_MAX_ARCS, sizeof(struct kept_run)), 0},
                     calloc(ring_shard_count(ring) + 1, sizeof(uint64_t))};
    if (!d.owned || !d.runs.items) {
        free(d.owned);
        free(d.runs.items);
        b->failed = 1;
        return -ENOMEM;
    }
    size_t runs = ring_runs(ring, draw_run, &d); /* keeps the runs and sums the owned hashes */
    put_head(b, t);
    int table = ring_algorithm_of(ring) != RING_KETAMA;
    gw_buf_printf(b,
                  "<text x=\"20\" y=\"28\" font-size=\"15\">%s %.12s, %zu %s, %zu "
                  "online shards, epoch %.12s</text>\n",
                  table ? ring_algorithm_name(ring_algorithm_of(ring)) : "ring", ring_id(ring),
                  table ? (size_t)ring_table_size(ring) : ring_points_total(ring),
                  table ? "slots" : "points", ring_shard_count(ring), t->epoch);
    int exact = runs <= GW_SVG_MAX_ARCS;
    if (exact)
        gw_buf_printf(b,
                      "<text x=\"20\" y=\"48\" class=\"mode\" data-runs=\"%zu\">one arc per "
                      "run of %s: %zu arcs</text>\n",
                      runs, table ? "slots" : "points", runs);
    else
        gw_buf_printf(b,
                      "<text x=\"20\" y=\"48\" class=\"mode\" data-runs=\"%zu\">%zu runs, "
                      "sampled: %d bins, each the owner of its middle hash</text>\n",
                      runs, runs, GW_SVG_BINS);
    /* Presentation attributes on a group, not a <style>: a page under a Content-Security-Policy
     * without 'unsafe-inline' shows the drawing as it is (docs/api.md §19). */
    gw_buf_puts(b, "<g class=\"arcs\" fill=\"none\" stroke-width=\"40\">\n");
    if (exact)
        put_runs(b, "arc", ring, &d.runs, RING_R);
    else
        draw_bins(b, ring);
    gw_buf_puts(b, "</g>\n");
    put_legend(b, ring, d.owned);
    free(d.owned);
    free(d.runs.items);
    return 0;
}

void gw_ring_svg(struct gw_buf *out, const struct gw_topology *t)
{
    if (put_ring(out, t) == 0)
        gw_buf_puts(out, "</svg>\n");
}

/* ---- moves ------------------------------------------------------------------------------- */

struct moves {
    const struct ring *to;
    uint32_t *same;       /* to-ring shard -> from-ring shard of the same id, or UINT32_MAX */
    struct run_list runs; /* the moved ranges, in their new owner */
    uint64_t *bins;       /* moved values per bin, drawn past GW_SVG_MAX_ARCS ranges */
    uint64_t moved;
    uint32_t start, owner; /* the open run (owner in the to ring), len 0 when none */
    uint64_t len;
};

static void close_move(struct moves *m)
{
    if (m->len == 0)
        return;
    keep_run(&m->runs, m->start, m->len, m->owner);
    for (uint64_t v = m->start, end = (uint64_t)m->start + m->len; v < end;) {
        uint64_t bin = v / BIN_LEN, upto = (bin + 1) * BIN_LEN < end ? (bin + 1) * BIN_LEN : end;
        m->bins[bin] += upto - v;
        v = upto;
    }
    m->len = 0;
}

/* One arc of the walk over both rings (ring/walk.h): part of a moved range when its owners
 * differ. */
static void move_segment(void *ctx, uint64_t start, uint64_t len, uint32_t from, uint32_t to)
{
    struct moves *m = ctx;
    if (m->same[to] == from) {
        close_move(m);
        return;
    }
    m->moved += len;
    if (m->len > 0 && (m->owner != to || (uint64_t)m->start + m->len != start))
        close_move(m);
    if (m->len == 0) {
        m->start = (uint32_t)start;
        m->owner = to;
    }
    m->len += len;
}

/* Maps each shard of `to` to the shard of `from` with the same id (both in id order). */
static uint32_t *same_shards(const struct ring *from, const struct ring *to)
{
    size_t nf = ring_shard_count(from), nt = ring_shard_count(to), f = 0;
    uint32_t *same = malloc((nt + 1) * sizeof(*same));
    for (size_t t = 0; same && t < nt; t++) {
        const char *id = ring_shard_id(to, (uint32_t)t);
        size_t len = ring_shard_id_len(to, (uint32_t)t);
        int cmp = 1;
        while (f < nf) {
            size_t fl = ring_shard_id_len(from, (uint32_t)f);
            cmp = memcmp(ring_shard_id(from, (uint32_t)f), id, fl < len ? fl : len);
            cmp = cmp ? cmp : (fl > len) - (fl < len);
            if (cmp >= 0)
                break;
            f++;
        }
        same[t] = cmp == 0 ? (uint32_t)f : UINT32_MAX;
    }
    return same;
}

static void put_moved_bins(struct gw_buf *b, const uint64_t *bins)
{
    for (uint64_t bin = 0; bin < GW_SVG_BINS; bin++) {
        if (bins[bin] == 0)
            continue;
        gw_buf_printf(b, "<path class=\"moved-bin\" data-start=\"%llu\" data-moved=\"%llu\" d=\"",
                      (unsigned long long)(bin * BIN_LEN), (unsigned long long)bins[bin]);
        put_path(b, (uint32_t)(bin * BIN_LEN), BIN_LEN, MOVE_R);
        gw_buf_printf(b, "\" stroke=\"#c0392b\" stroke-opacity=\"%.3f\"/>\n",
                      (double)bins[bin] / (double)BIN_LEN);
    }
}

/* Both rings' owners along the circle as drawn: ring/walk.h's walk over the points, or two Maglev
 * tables of one size slot by slot (gw_plan_compute refuses any other pair). */
static void walk_drawn_pair(const struct ring *from, const struct ring *to, ring_pair_fn fn,
                            void *ctx)
{
    if (ring_algorithm_of(from) == RING_KETAMA) {
        ring_walk_pair(from, to, fn, ctx);
        return;
    }
    const uint32_t *a = ring_table(from), *b = ring_table(to);
    uint64_t m = ring_table_size(from);
    for (uint64_t s = 0; s < m; s++)
        fn(ctx, slot_start(s, m), slot_start(s + 1, m) - slot_start(s, m), a[s], b[s]);
}

int gw_ring_svg_moves(struct gw_buf *out, const struct gw_topology *from,
                      const struct gw_topology *to)
{
    if (ring_shard_count(from->ring) == 0 || ring_shard_count(to->ring) == 0)
        return -ENOENT;
    struct moves m = {.to = to->ring};
    m.same = same_shards(from->ring, to->ring);
    m.bins = calloc(GW_SVG_BINS, sizeof(uint64_t));
    m.runs.items = calloc(GW_SVG_MAX_ARCS, sizeof(struct kept_run));
    if (!m.same || !m.bins || !m.runs.items || put_ring(out, from) != 0) {
        free(m.same);
        free(m.bins);
        free(m.runs.items);
        out->failed = 1;
        return -ENOMEM;
    }
    walk_drawn_pair(from->ring, to->ring, move_segment, &m); /* keeps the ranges, fills bins */
    close_move(&m);
    gw_buf_printf(out,
                  "<text x=\"20\" y=\"668\" class=\"moves\" data-moved=\"%llu\" data-runs=\"%zu\" "
                  "data-to-ring=\"%s\" data-to-epoch=\"%s\">to epoch %.12s: %llu of 2^32 hashes "
                  "move (%.4f%%), outer ring, in their new owner's colour</text>\n",
                  (unsigned long long)m.moved, m.runs.count, ring_id(to->ring), to->epoch,
                  to->epoch, (unsigned long long)m.moved, 100.0 * (double)m.moved / (double)HASHES);
    gw_buf_puts(out, "<g class=\"moves\" fill=\"none\" stroke-width=\"22\">\n");
    if (m.runs.count <= GW_SVG_MAX_ARCS)
        put_runs(out, "move", to->ring, &m.runs, MOVE_R);
    else
        put_moved_bins(out, m.bins);
    gw_buf_puts(out, "</g>\n");
    put_new_shards(out, to->ring, m.same, ring_shard_count(from->ring));
    gw_buf_puts(out, "</svg>\n");
    free(m.same);
    free(m.bins);
    free(m.runs.items);
    return out->failed ? -ENOMEM : 0;
}
