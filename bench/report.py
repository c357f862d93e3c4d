#!/usr/bin/env python3
"""Turns bench/results/*.json into the figures-vs-targets table, summary.json and PNG plots.

usage: report.py RESULTS_DIR   (prints the table; exits 1 if a correctness check failed)
"""
import json
import os
import subprocess
import sys


def load(results, name):
    path = os.path.join(results, name)
    return json.load(open(path)) if os.path.exists(path) else None


def rows(r):
    """(item, figure, value text, target text, met) for every target of docs/performance.md."""
    ring, gw, py = r["ring"], r["gateway"], r["reference"]
    out = []
    lk = {x["shards"]: x for x in ring["lookup"]}
    for n, limit in ((3, 2.0), (10000, 2.5)):
        x = lk[n]
        out.append(("1", "lookup %d shards / SHA-1 floor" % n,
                    "%.2fx (%.0f / %.0f ns)" % (x["ratio"], x["lookup_ns"], x["floor_ns"]),
                    "<= %.1fx" % limit, x["ratio"] <= limit))
    for n in (100, 1000):
        x = lk[n]
        out.append(("1", "lookup %d shards / SHA-1 floor" % n,
                    "%.2fx (%.0f / %.0f ns)" % (x["ratio"], x["lookup_ns"], x["floor_ns"]),
                    "(no target)", None))
    for x in ring["peer"]:
        out.append(("2", "libmemcached / shardgate md5, %d shards" % x["shards"],
                    "%.2fx (%.0f / %.0f ns)" % (x["speedup"], x["libmemcached_ns"],
                                                x["shardgate_ns"]),
                    ">= 2x", x["speedup"] >= 2.0))
        out.append(("2", "identical placements, %d shards" % x["shards"],
                    "%d of %d" % (x["identical"], x["keys"]), "all", x["identical"] == x["keys"]))
    for x in ring["build"]:
        limit = 50.0 if x["shards"] == 10000 else None
        out.append(("3", "ring build %d x 160" % x["shards"],
                    "%.1f ms (CPU %.1f ms)" % (x["ms"], x["cpu_ms"]),
                    "<= 50 ms" if limit else "(no target)",
                    x["ms"] <= limit if limit else None))
    ratio = gw["ns_per_change"] / py["ns_per_change"]
    out.append(("5", "gateway parse+place+receipt / Python",
                "1/%.1f (%.0f / %.0f ns per change)" % (1 / ratio, gw["ns_per_change"],
                                                       py["ns_per_change"]),
                "<= 1/3", ratio <= 1 / 3))
    out.append(("5", "receipt bytes C == Python", "identical" if r["receipts_equal"] else "DIFFER",
                "identical", r["receipts_equal"]))
    return out


def table(rs):
    lines = ["| item | figure | measured | target | met |", "|---|---|---|---|---|"]
    for item, what, value, target, met in rs:
        mark = "-" if met is None else ("yes" if met else "**no**")
        lines.append("| %s | %s | %s | %s | %s |" % (item, what, value, target, mark))
    return "\n".join(lines)


def distribution_table(ring):
    lines = ["| shards | vnodes | max/mean | stddev/mean | moved, one offline (ideal) "
             "| moved, one added (ideal) |", "|---|---|---|---|---|---|"]
    for x in ring["distribution"]:
        lines.append("| %d | %d | %.3f | %.3f | %.4f (%.4f) | %.4f (%.4f) |" % (
            x["shards"], x["vnodes"], x["max_over_mean"], x["stddev_over_mean"],
            x["moved_offline"], x["ideal_offline"], x["moved_added"], x["ideal_added"]))
    return "\n".join(lines)


def write_dat(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


PLOTS = {
    "lookup.png": """set title 'Ring lookup cost vs ring size (sha1, 160 vnodes, 1M keys)'
set logscale x; set xlabel 'online shards'; set ylabel 'ns per lookup'; set yrange [0:*]
set key top left
plot '{d}/lookup.dat' u 1:2 w lp t 'ring lookup (batched, gateway path)', \\
     '' u 1:3 w lp t 'ring lookup (one call per key)', \\
     '' u 1:4 w lp t 'floor: one SHA-1 block'""",
    "keys_per_shard.png": """set title 'Keys per shard: max/mean over 1M keys'
set xlabel 'vnodes per shard'; set ylabel 'max / mean'; set logscale x; set key top right
plot for [n in '3 10 100'] '{d}/spread_'.n.'.dat' u 1:2 w lp t n.' shards (max/mean)', \\
     for [n in '3 10 100'] '{d}/spread_'.n.'.dat' u 1:(1+$3) w l dt 2 t n.' shards (1+stddev/mean)'""",
    "keys_moved.png": """set title 'Keys moved on one membership change (1M keys)'
set logscale xy; set xlabel 'shards before the change'; set ylabel 'fraction of keys moved'
set key bottom left
plot '{d}/moved.dat' u 1:2 w p pt 7 t 'one shard offline', \\
     '' u 1:3 w p pt 5 t 'one shard added', \\
     '' u 1:4 w l t 'ideal 1/N', '' u 1:5 w l dt 2 t 'ideal 1/(N+1)'""",
}


def plots(results, ring):
    write_dat(os.path.join(results, "lookup.dat"),
              ["%d %.2f %.2f %.2f" % (x["shards"], x["lookup_ns"], x["single_ns"], x["floor_ns"])
               for x in ring["lookup"]])
    for n in (3, 10, 100):
        write_dat(os.path.join(results, "spread_%d.dat" % n),
                  ["%d %.4f %.4f" % (x["vnodes"], x["max_over_mean"], x["stddev_over_mean"])
                   for x in ring["distribution"] if x["shards"] == n])
    write_dat(os.path.join(results, "moved.dat"),
              ["%d %.5f %.5f %.5f %.5f" % (x["shards"], x["moved_offline"], x["moved_added"],
                                           x["ideal_offline"], x["ideal_added"])
               for x in ring["distribution"] if x["vnodes"] == 160])
    for png, script in PLOTS.items():
        text = "set terminal pngcairo size 800,500\nset output '%s/%s'\nset grid\n%s\n" % (
            results, png, script.format(d=results))
        proc = subprocess.run(["gnuplot"], input=text.encode(), capture_output=True)
        if proc.returncode != 0:
            sys.stderr.write("gnuplot %s: %s\n" % (png, proc.stderr.decode()))


def main():
    results = sys.argv[1]
    r = {name: load(results, name + ".json")
         for name in ("ring", "gateway", "reference", "memory_ring", "memory_serve")}
    receipts = load(results, "receipts.json")
    r["receipts_equal"] = bool(receipts and receipts["equal"])
    rs = rows(r)
    text = table(rs) + "\n\n" + distribution_table(r["ring"]) + "\n"
    mem = r["memory_ring"]
    text += "\nMemory: a process holding a %d-shard ring: VmHWM %d kB (%d kB before the build)" % (
        mem["shards"], mem["vmhwm_kb"], mem["vmhwm_before_kb"])
    if r["memory_serve"]:
        text += "; `shardgate serve` with %d shards: VmHWM %d kB" % (
            r["memory_serve"]["shards"], r["memory_serve"]["vmhwm_kb"])
    text += ".\n"
    open(os.path.join(results, "table.md"), "w").write(text)
    summary = {"targets": [dict(zip(("item", "figure", "measured", "target", "met"), x))
                           for x in rs], **{k: v for k, v in r.items()}}
    json.dump(summary, open(os.path.join(results, "summary.json"), "w"), indent=1)
    plots(results, r["ring"])
    print(text)
    ok = r["ring"]["failures"] == 0 and r["receipts_equal"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
