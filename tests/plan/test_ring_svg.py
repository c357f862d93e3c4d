#!/usr/bin/env python3
"""The ring drawn (docs/tools.md §1.3): `shardgate ring --svg` and `shardgate plan --svg`
against runs, bins and moves computed here from tests/health/ketama.py's ring (neither the
gateway's nor the probe's): every arc's shard, start and length exactly, the angles of the
paths, and the sampled drawing of a ring too large to draw run by run."""

import bisect
import json
import math
import os
import re
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "health"))
import ketama  # noqa: E402
from sgtest import case, eq, ok, read, run_gateway, src, tmpdir, write, main  # noqa: E402

SPACE = 2**32
NS = "{http://www.w3.org/2000/svg}"
D_ONLINE = os.path.join(HERE, "shards-d-online.json")
MAX_ARCS, BINS = 4096, 1024  # ring_svg.h


def shards_of(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)["shards"]


def ring_of(shards, vnodes=160):
    return ketama.Ring("sha1", vnodes, shards)


def owner(ring, h):
    return ring.lookup(h)[1]


def runs(ring):
    """[(start, len, shard)] of runs of one shard, cyclic, the points that own nothing left out:
    point i owns the values after point i-1 up to its own."""
    pts = ring.points
    arcs = []
    for i, (v, sid, _) in enumerate(pts):
        prev = pts[i - 1][0]
        length = v - prev if i > 0 else SPACE - prev + v
        if length:
            arcs.append([(prev + 1) % SPACE, length, sid.decode()])
    merged = []
    for a in arcs:
        if merged and merged[-1][2] == a[2]:
            merged[-1][1] += a[1]
        else:
            merged.append(list(a))
    if len(merged) > 1 and merged[0][2] == merged[-1][2]:
        last = merged.pop()
        merged[0] = [last[0], last[1] + merged[0][1], last[2]]
    return sorted(tuple(a) for a in merged)


def moved_runs(a, b):
    """[(start, len, new owner)]: maximal ranges whose owner differs, cut at 0."""
    cuts = sorted(set(a.values) | set(b.values))
    segs, start = [], 0
    for v in cuts + [SPACE - 1]:
        if v + 1 > start:
            segs.append((start, v + 1 - start, owner(a, v), owner(b, v)))
        start = v + 1
    out = []
    for s, length, f, t in segs:
        if f == t:
            continue
        if out and out[-1][2] == t and out[-1][0] + out[-1][1] == s:
            out[-1][1] += length
        else:
            out.append([s, length, t])
    return [tuple(x) for x in out]


def svg_of(path):
    with open(path, encoding="utf-8") as f:
        return ET.fromstring(f.read())


def paths(root, cls):
    return [p for p in root.iter(NS + "path") if p.get("class") == cls]


def triples(elements):
    return sorted((int(p.get("data-start")), int(p.get("data-len")), p.get("data-shard"))
                  for p in elements)


def angle(x, y):
    """Clockwise from the top, around the centre (320, 345) of ring_svg.c."""
    return math.atan2(x - 320, 345 - y) % (2 * math.pi)


def sweep(path):
    """The angle a path covers, read from its coordinates: one arc, or two halves of the whole
    circle (M x y A rx ry rotation large-arc sweep x y ...)."""
    nums = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", path.get("d"))]
    arcs = [nums[k:k + 7] for k in range(2, len(nums), 7)]
    if len(arcs) == 2:
        eq([a[3] for a in arcs], [0, 0], "two halves: neither is a large arc")
        return 2 * math.pi
    eq(len(arcs), 1, "one arc in %r" % path.get("d"))
    d = (angle(arcs[0][5], arcs[0][6]) - angle(nums[0], nums[1])) % (2 * math.pi)
    eq(arcs[0][3] == 1, d > math.pi, "large-arc flag of an arc of %r rad" % d)
    return d


def ring_svg(shards_path, out, conf=None):
    r = run_gateway("ring", "--conf", conf or src("conf", "dispatch.env"), "--shards",
                    shards_path, "--svg", out)
    eq((r.returncode, r.stderr), (0, ""), "ring --svg exit")
    return svg_of(out)


def many_shards(n, prefix="s"):
    return [{"id": "%s%02d" % (prefix, i), "state": "online", "capacity": 10} for i in range(n)]


@case("svg")
def worked_example_one_arc_per_run():
    d = tmpdir()
    root = ring_svg(src("input", "shards.json"), os.path.join(d, "ring.svg"))
    ring = ring_of(shards_of(src("input", "shards.json")))
    arcs = paths(root, "arc")
    want = runs(ring)
    eq(triples(arcs), want, "one arc per run: start, length and shard")
    eq(len(arcs), 331, "runs of the worked example")
    eq(root.find(NS + "text[@class='mode']").get("data-runs"), "331", "data-runs")
    eq(sum(a[1] for a in want), SPACE, "the arcs cover the 2^32 values")
    eq(root.get("data-ring"), ring.ring_id(), "data-ring")
    eq(root.get("data-epoch"), "f60a5fb19effc4cfa95aed0af45997f72905f6ae", "data-epoch")
    for p in arcs:
        expect = int(p.get("data-len")) / SPACE * 2 * math.pi
        ok(abs(sweep(p) - expect) < 2e-5, "arc angle of %s: %r, want %r"
           % (p.get("data-start"), sweep(p), expect))
    ok(abs(sum(sweep(p) for p in arcs) - 2 * math.pi) < 1e-3, "the angles sum to the circle")
    owned = {g.get("data-shard"): int(g.get("data-owned")) for g in root.iter(NS + "g")
             if g.get("class") == "legend"}
    per = {}
    for start, length, sid in want:
        per[sid] = per.get(sid, 0) + length
    eq(owned, per, "the legend's owned values per shard")


@case("svg")
def one_shard_owns_the_circle():
    d = tmpdir()
    shards = write(os.path.join(d, "one.json"), json.dumps({"shards": many_shards(1)}))
    root = ring_svg(shards, os.path.join(d, "ring.svg"))
    arcs = paths(root, "arc")
    eq(triples(arcs), [(0, SPACE, "s00")], "one arc of 2^32 values")
    ok(abs(sweep(arcs[0]) - 2 * math.pi) < 1e-6, "drawn as the whole circle")


@case("svg")
def long_arcs_carry_the_large_arc_flag():
    """One point a shard: arcs of every length, a third and a half of the circle apart."""
    d = tmpdir()
    conf = write(os.path.join(d, "dispatch.env"), ketama.contract_text(ketama.contract("sha1", 1)))
    shards = many_shards(3)
    root = ring_svg(write(os.path.join(d, "s.json"), json.dumps({"shards": shards})),
                    os.path.join(d, "ring.svg"), conf)
    want = runs(ring_of(shards, 1))
    lens = sorted(a[1] for a in want)
    ok(SPACE // 3 < lens[1] < SPACE // 2 < lens[2], "arcs on both sides of half: %r" % lens)
    arcs = paths(root, "arc")
    eq(triples(arcs), want, "three arcs")
    for p in arcs:
        expect = int(p.get("data-len")) / SPACE * 2 * math.pi
        ok(abs(sweep(p) - expect) < 2e-5, "arc angle %r, want %r" % (sweep(p), expect))


@case("svg")
def a_large_ring_is_sampled():
    """40 shards: 6,400 points, more runs than MAX_ARCS: bins by the owner of each middle."""
    d = tmpdir()
    shards = many_shards(40)
    root = ring_svg(write(os.path.join(d, "s.json"), json.dumps({"shards": shards})),
                    os.path.join(d, "ring.svg"))
    ring = ring_of(shards)
    want_runs = len(runs(ring))
    ok(want_runs > MAX_ARCS, "the ring has more runs than are drawn: %d" % want_runs)
    eq(root.find(NS + "text[@class='mode']").get("data-runs"), str(want_runs), "data-runs")
    eq(paths(root, "arc"), [], "no arc per run")
    bins = triples(paths(root, "bin"))
    width = SPACE // BINS
    expect, start = [], 0
    for b in range(BINS + 1):
        sid = owner(ring, b * width + width // 2) if b < BINS else None
        if b > 0 and (b == BINS or sid != expect_sid):
            expect.append((start, b * width - start, expect_sid))
            start = b * width
        expect_sid = sid
    eq(bins, expect, "bins, neighbours of one owner merged")
    eq(sum(b[1] for b in bins), SPACE, "the bins cover the circle")


def plan_svg(to_path, out, shards_path=None):
    r = run_gateway("plan", "--conf", src("conf", "dispatch.env"), "--shards",
                    shards_path or src("input", "shards.json"), "--to", to_path, "--svg", out)
    eq((r.returncode, r.stderr), (0, ""), "plan --svg exit")
    return json.loads(r.stdout), svg_of(out)


@case("svg")
def plan_draws_what_moves():
    d = tmpdir()
    plan, root = plan_svg(D_ONLINE, os.path.join(d, "plan.svg"))
    a, b = ring_of(shards_of(src("input", "shards.json"))), ring_of(shards_of(D_ONLINE))
    want = moved_runs(a, b)
    eq(triples(paths(root, "move")), sorted(want), "the moved ranges and their new owner")
    note = root.find(NS + "text[@class='moves']")
    eq(int(note.get("data-moved")), plan["moved_points"], "data-moved is the plan's")
    eq(sum(m[1] for m in want), plan["moved_points"], "the moved ranges sum to the plan's")
    eq(note.get("data-to-epoch"), plan["to_epoch"], "data-to-epoch")
    eq({m[2] for m in want}, {"shard-d"}, "everything moves to shard-d")
    eq(triples(paths(root, "arc")), runs(a), "the current ring drawn inside")
    eq([g.get("data-shard") for g in root.iter(NS + "g") if g.get("class") == "legend-new"],
       ["shard-d"], "the new shard in the legend")


@case("svg")
def a_large_move_is_shaded_by_bin():
    """40 shards renamed: every value moves, in more ranges than MAX_ARCS: 1,024 bins, each with
    the values of it that move."""
    d = tmpdir()
    old, new = many_shards(40), many_shards(40, "t")
    fa = write(os.path.join(d, "a.json"), json.dumps({"shards": old}))
    fb = write(os.path.join(d, "b.json"), json.dumps({"shards": new}))
    plan, root = plan_svg(fb, os.path.join(d, "plan.svg"), fa)
    want = moved_runs(ring_of(old), ring_of(new))
    ok(len(want) > MAX_ARCS, "more moved ranges than are drawn: %d" % len(want))
    eq(plan["moved_points"], SPACE, "everything moves")
    eq(paths(root, "move"), [], "no arc per moved range")
    bins = {int(p.get("data-start")): int(p.get("data-moved")) for p in paths(root, "moved-bin")}
    width = SPACE // BINS
    eq(bins, {b * width: width for b in range(BINS)}, "every bin moves whole")
    eq(int(root.find(NS + "text[@class='moves']").get("data-runs")), len(want), "data-runs")


def moved_per_bin(moved):
    """{bin start: values of the bin that move}, from the moved ranges."""
    width, per = SPACE // BINS, {}
    for start, length, _ in moved:
        at, end = start, start + length
        while at < end:
            b = at // width
            upto = min(end, (b + 1) * width)
            per[b * width] = per.get(b * width, 0) + upto - at
            at = upto
    return per


@case("svg")
def a_large_partial_move_is_shaded_by_its_share_of_each_bin():
    """Half of 80 shards renamed: more moved ranges than MAX_ARCS, and most bins move in part;
    each bin's data-moved is the values of it in the moved ranges, recomputed here."""
    d = tmpdir()
    old = many_shards(80)
    new = old[:40] + many_shards(40, "t")
    fa = write(os.path.join(d, "a.json"), json.dumps({"shards": old}))
    fb = write(os.path.join(d, "b.json"), json.dumps({"shards": new}))
    plan, root = plan_svg(fb, os.path.join(d, "plan.svg"), fa)
    want = moved_runs(ring_of(old), ring_of(new))
    ok(len(want) > MAX_ARCS, "more moved ranges than are drawn: %d" % len(want))
    per = moved_per_bin(want)
    width = SPACE // BINS
    partial = sum(1 for v in per.values() if 0 < v < width)
    ok(partial > BINS // 2, "most bins move in part: %d of %d" % (partial, BINS))
    bins = {int(p.get("data-start")): int(p.get("data-moved")) for p in paths(root, "moved-bin")}
    eq(bins, {s: v for s, v in per.items() if v}, "each bin's moved values")
    eq(sum(bins.values()), plan["moved_points"], "the bins add up to the plan's moved_points")


@case("svg")
def an_unwritable_svg_is_an_error_naming_the_path():
    d = tmpdir()
    bad = os.path.join(d, "missing", "ring.svg")
    r = run_gateway("ring", "--conf", src("conf", "dispatch.env"), "--shards",
                    src("input", "shards.json"), "--svg", bad)
    eq((r.returncode, r.stdout), (1, ""), "exit 1, no summary printed")
    eq(r.stderr, "shardgate: %s: No such file or directory\n" % bad, "the message names the path")


@case("svg")
def svg_to_stdout_is_the_drawing_alone():
    """`--svg -` writes the drawing to stdout, byte for byte the file's, and nothing else, and
    creates no file named `-` (docs/tools.md §1.3)."""
    d = tmpdir()
    for cmd, extra in (("ring", []), ("plan", ["--to", D_ONLINE])):
        out = os.path.join(d, cmd + ".svg")
        base = [cmd, "--conf", src("conf", "dispatch.env"), "--shards",
                src("input", "shards.json")] + extra
        eq(run_gateway(*(base + ["--svg", out])).returncode, 0, cmd + " --svg FILE")
        r = run_gateway(*(base + ["--svg", "-"]), cwd=d)
        eq((r.returncode, r.stderr, r.stdout), (0, "", read(out).decode()),
           cmd + " --svg -: the file's bytes on stdout, alone")
        eq(os.path.exists(os.path.join(d, "-")), False, cmd + " --svg -: no file named -")


if __name__ == "__main__":
    sys.exit(main(sys.argv, ("shardgate", "source")))
