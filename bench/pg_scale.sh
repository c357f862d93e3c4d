#!/usr/bin/env bash
# Scale-out on PostgreSQL (docs/performance.md §13): POST throughput of
#   A  one gateway on the file store (--state-dir, a temp dir): the baseline
#   B  one replica on PostgreSQL (--store postgres, direct, no HAProxy)
#   C  two replicas on PostgreSQL behind HAProxy (ops/cluster/haproxy.cfg.in)
#   D  three replicas on PostgreSQL behind HAProxy
# for the same workload: wrk (bench/http_post.lua) posting batches of 1 and of 100 changes, each
# with a unique batch_id and `Idempotency-Key: <batch_id>` (what HAProxy hashes). Every phase
# (configuration x batch size x round) starts from nothing: a new state dir for A, an empty
# schema (DROP SCHEMA public CASCADE, then `shardgate db init`) for B-D, new gateways and a new
# HAProxy. The order alternates between rounds (A B C D, then D C B A; 1 then 100 changes, then
# 100 then 1) and the report gives medians over the rounds; ratios are against A in the same
# round. After each phase every gateway's GET /metrics gives the group commits: their count,
# the records in them and the time of each (shardgate_journal_fsync_duration_seconds: on the
# file store write + fdatasync, on PostgreSQL the whole transaction, sequencer lock included).
#
# usage: bench/pg_scale.sh [--seconds N] [--rounds R] [--out FILE]
# env:   SECONDS_PER_PHASE (20), ROUNDS (2), CONNS (64), WRK_THREADS (2), SERVER_THREADS (2),
#        BUILD (build/bench-rel), OUT (bench/results/pg_scale.json)
# Needs root (or the postgres user): ops/pg.sh runs PostgreSQL as postgres. Everything listens
# on 127.0.0.1. Fails on any non-200 answer, wrk error, or batch not answered as accepted.
set -euo pipefail
# shellcheck source=ops/lib.sh
. "$(dirname "$0")/../ops/lib.sh"
cd "$SHARDGATE_ROOT"

PHASE_SECONDS=${SECONDS_PER_PHASE:-20}
ROUNDS=${ROUNDS:-2}
CONNS=${CONNS:-64}
WRK_THREADS=${WRK_THREADS:-2}
SERVER_THREADS=${SERVER_THREADS:-2}
BUILD=${BUILD:-build/bench-rel}
OUT=${OUT:-bench/results/pg_scale.json}
SIZES=(1 100)
CONFIGS=(A B C D)

die() {
    echo "bench/pg_scale.sh: $*" >&2
    exit 1
}

while [ $# -gt 0 ]; do
    case $1 in
    --seconds) [ $# -ge 2 ] || die "--seconds N"; PHASE_SECONDS=$2; shift 2 ;;
    --rounds) [ $# -ge 2 ] || die "--rounds R"; ROUNDS=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || die "--out FILE"; OUT=$2; shift 2 ;;
    *) echo "usage: bench/pg_scale.sh [--seconds N] [--rounds R] [--out FILE]" >&2; exit 64 ;;
    esac
done
[[ $PHASE_SECONDS =~ ^[1-9][0-9]*$ ]] || die "--seconds takes a positive integer"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "--rounds takes a positive integer"

for tool in wrk haproxy curl psql python3; do
    command -v "$tool" >/dev/null || sg_install_deps
done
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSHARDGATE_BENCH=ON >/dev/null
cmake --build "$BUILD" -j 2 --target shardgate >/dev/null
BIN="$BUILD/gateway/shardgate"

# The temp dir holds PostgreSQL's data, which runs as postgres: it must be able to reach it.
tmp=$(mktemp -d /tmp/pg_scale.XXXXXX)
chmod 755 "$tmp"
PIDS=()
PG_STARTED=0
cleanup() {
    local rc=$? pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [ "$PG_STARTED" = 1 ]; then ops/pg.sh stop "$tmp/pg" || true; fi
    rm -rf "$tmp"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_ready URL PID: polls URL/readyz until 200 while PID lives (30 s).
wait_ready() {
    local i
    for ((i = 0; i < 300; i++)); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$1/readyz" || true)" = 200 ] &&
            return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# Stops the processes of a phase (SIGTERM, then waits for them).
stop_all() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    PIDS=()
}

echo "== load before: $(uptime)" >&2
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

PG_PORT=$(free_port)
PG_STARTED=1
STORE=$(ops/pg.sh start "$tmp/pg" "$PG_PORT")
# The superuser over the socket, as the postgres user (peer: it has no password).
PSQL=(runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -h "$tmp/pg" -p "$PG_PORT" -U postgres -d shardgate)

# An empty shardgate schema: nothing of the phase before survives.
fresh_schema() {
    "${PSQL[@]}" -c "SET client_min_messages = warning" -c "DROP SCHEMA public CASCADE" \
        -c "CREATE SCHEMA public AUTHORIZATION pg_database_owner" \
        -c "GRANT USAGE ON SCHEMA public TO PUBLIC" >/dev/null || die "could not empty the schema"
    "$BIN" db init --store "$STORE" >"$tmp/db-init.log" 2>&1 ||
        die "shardgate db init failed: $(cat "$tmp/db-init.log")"
    "${PSQL[@]}" -c "CHECKPOINT" >/dev/null || die "CHECKPOINT failed"
}

# start_replica N: a gateway on the shared PostgreSQL; appends its base URL to GW_URLS.
start_replica() {
    local log="$tmp/gw-$1.log" pid port
    "$BIN" serve --conf conf/dispatch.env --shards input/shards.json --store "$STORE" \
        --listen 127.0.0.1:0 --threads "$SERVER_THREADS" </dev/null 2>"$log" &
    pid=$!
    PIDS+=("$pid")
    port=$(sg_listen_port "$log" "$pid")
    [ -n "$port" ] || die "replica $1 did not listen: $(tail -n 5 "$log")"
    wait_ready "http://127.0.0.1:$port" "$pid" || die "replica $1 not ready: $(tail -n 5 "$log")"
    GW_URLS+=("http://127.0.0.1:$port")
}

# start_haproxy: HAProxy in front of GW_URLS' ports, as ops/cluster.sh renders it; sets TARGET.
start_haproxy() {
    local port pid ports=() u
    port=$(free_port)
    for u in "${GW_URLS[@]}"; do ports+=("${u##*:}"); done
    sg_haproxy_cfg "$tmp/haproxy.cfg" "$port" "${ports[@]}" || die "haproxy -c refused the config"
    haproxy -db -f "$tmp/haproxy.cfg" </dev/null >"$tmp/haproxy.log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    TARGET="http://127.0.0.1:$port"
    wait_ready "$TARGET" "$pid" || die "HAProxy not ready: $(tail -n 5 "$tmp/haproxy.log")"
}

# run_phase ROUND CONFIG SIZE: one measurement; appends a JSON line to $tmp/phases.jsonl.
run_phase() {
    local round=$1 config=$2 size=$3 replicas=0 n wrk_out="$tmp/wrk.out"
    GW_URLS=()
    case $config in
    A)
        rm -rf "$tmp/state"
        sg_bench_serve "$BIN" "$tmp/state" "$tmp/gw-file.log" --threads "$SERVER_THREADS"
        PIDS+=("$SG_SERVE_PID")
        GW_URLS=("http://127.0.0.1:$SG_SERVE_PORT")
        wait_ready "${GW_URLS[0]}" "$SG_SERVE_PID" || die "file-store gateway not ready"
        TARGET=${GW_URLS[0]}
        replicas=1
        ;;
    B | C | D)
        case $config in B) replicas=1 ;; C) replicas=2 ;; D) replicas=3 ;; esac
        fresh_schema
        for ((n = 1; n <= replicas; n++)); do start_replica "$n"; done
        TARGET=${GW_URLS[0]}
        [ "$config" = B ] || start_haproxy
        ;;
    esac
    echo "== round $round, $config ($replicas replica(s)), $size change(s) per batch, ${PHASE_SECONDS}s -> $TARGET" >&2
    wrk -t"$WRK_THREADS" -c"$CONNS" -d"${PHASE_SECONDS}s" --timeout 10s --latency \
        -s bench/http_post.lua "$TARGET" -- "$size" "r$round$config$size" key >"$wrk_out" 2>&1 ||
        die "wrk failed: $(cat "$wrk_out")"
    if grep -q 'Non-2xx or 3xx responses' "$wrk_out"; then
        die "non-2xx answers: $(grep 'Non-2xx' "$wrk_out")"
    fi
    grep -q '^{"changes_per_batch"' "$wrk_out" || die "no summary from wrk: $(cat "$wrk_out")"
    python3 - "$round" "$config" "$replicas" "$size" "$PHASE_SECONDS" "$wrk_out" "${GW_URLS[@]}" \
        >>"$tmp/phases.jsonl" <<'PY' || die "phase check failed (see above)"
import json, sys, urllib.request
rnd, config, replicas, size, secs, wrk_out, urls = (sys.argv[1], sys.argv[2], int(sys.argv[3]),
    int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7:])
w = [json.loads(l) for l in open(wrk_out) if l.startswith('{"changes_per_batch"')][-1]
def fail(msg):
    sys.exit("bench/pg_scale.sh: round %s %s %s: %s" % (rnd, config, size, msg))
if w["non_200"] or w["errors"] or w["requests"] == 0:
    fail("wrk: %d non-200, %d socket errors, %d requests" % (w["non_200"], w["errors"], w["requests"]))
per = []
for u in urls:
    m = {}
    for line in urllib.request.urlopen(u + "/metrics", timeout=10).read().decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            m[name] = float(value)
    per.append(m)
tot = lambda k: sum(m.get(k, 0) for m in per)
accepted = [int(m['shardgate_batches_total{result="accepted"}']) for m in per]
others = {r: tot('shardgate_batches_total{result="%s"}' % r)
          for r in ("replayed", "rejected", "in_flight", "unavailable", "error")}
if any(others.values()):
    fail("answers other than accepted: %s" % others)
if sum(accepted) < w["requests"]:
    fail("%d accepted < %d answered 200" % (sum(accepted), w["requests"]))
if min(accepted) == 0:
    fail("a replica took no batch: %s" % accepted)
h = "shardgate_journal_fsync_duration_seconds"
commits, records = tot("shardgate_journal_commits_total"), tot("shardgate_journal_records_total")
tx_sum, tx_count = tot(h + "_sum"), tot(h + "_count")
print(json.dumps({
    "round": int(rnd), "config": config, "store": "file" if config == "A" else "postgres",
    "replicas": replicas, "haproxy": config in ("C", "D"), "changes_per_batch": size,
    "wrk": w, "accepted_per_replica": accepted,
    "group_commits": commits, "records": records,
    "commit_seconds_sum": tx_sum, "commit_count": tx_count,
    "commit_ms_mean": 1000 * tx_sum / tx_count if tx_count else None,
    "group_size_mean": records / commits if commits else None,
    # groups committed per second by all replicas together: with the sequencer row always
    # locked, 1000 / this is the time each group holds it
    "groups_per_s": commits / w["seconds"],
    # the share of the phase each writer thread spent in its commit (wait for the lock included)
    "writer_busy": tx_sum / (w["seconds"] * replicas)}))
PY
    tail -n 1 "$tmp/phases.jsonl" | python3 -c 'import json, sys
p = json.load(sys.stdin); w = p["wrk"]
print("   %.0f changes/s, %.0f batches/s, p99 %.1f ms; commits: %.2f ms, %.1f records/group" % (
    w["changes_per_s"], w["requests_per_s"], w["p99_ms"], p["commit_ms_mean"], p["group_size_mean"]))' >&2
    stop_all
}

: >"$tmp/phases.jsonl"
for ((round = 1; round <= ROUNDS; round++)); do
    if ((round % 2)); then
        order=("${CONFIGS[@]}") sizes=("${SIZES[@]}")
    else
        order=(D C B A) sizes=("${SIZES[1]}" "${SIZES[0]}")
    fi
    for config in "${order[@]}"; do
        for size in "${sizes[@]}"; do run_phase "$round" "$config" "$size"; done
    done
done

echo "== load after: $(uptime)" >&2
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

mkdir -p "$(dirname "$OUT")"
python3 - "$tmp/phases.jsonl" "$OUT" "$PHASE_SECONDS" "$ROUNDS" "$CONNS" "$WRK_THREADS" \
    "$SERVER_THREADS" "$LOAD_BEFORE" "$LOAD_AFTER" <<'PY'
import json, os, statistics, sys
src, out, secs, rounds, conns, wrk_threads, server_threads, load_before, load_after = sys.argv[1:]
phases = [json.loads(l) for l in open(src)]
by = {(p["round"], p["config"], p["changes_per_batch"]): p for p in phases}
med = statistics.median
rows = []
for size in sorted({p["changes_per_batch"] for p in phases}):
    for config in ("A", "B", "C", "D"):
        ps = [p for p in phases if p["config"] == config and p["changes_per_batch"] == size]
        ratios = [p["wrk"]["changes_per_s"] / by[(p["round"], "A", size)]["wrk"]["changes_per_s"]
                  for p in ps]
        rows.append({
            "config": config, "store": ps[0]["store"], "replicas": ps[0]["replicas"],
            "haproxy": ps[0]["haproxy"], "changes_per_batch": size,
            "changes_per_s": med(p["wrk"]["changes_per_s"] for p in ps),
            "batches_per_s": med(p["wrk"]["requests_per_s"] for p in ps),
            "p99_ms": med(p["wrk"]["p99_ms"] for p in ps),
            "ratio_vs_file": med(ratios), "ratio_per_round": ratios,
            "commit_ms_mean": med(p["commit_ms_mean"] for p in ps),
            "group_size_mean": med(p["group_size_mean"] for p in ps),
            "writer_busy": med(p["writer_busy"] for p in ps),
            "groups_per_s": med(p["groups_per_s"] for p in ps),
            "changes_per_s_per_round": [p["wrk"]["changes_per_s"] for p in ps]})
doc = {"bench": "pg_scale", "seconds_per_phase": int(secs), "rounds": int(rounds),
       "connections": int(conns), "wrk_threads": int(wrk_threads),
       "server_threads": int(server_threads), "cpus": os.cpu_count(),
       "loadavg_before": load_before, "loadavg_after": load_after,
       "summary": rows, "phases": phases}
with open(out, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
print("medians of %s rounds, %s s per phase, wrk %s connections / %s threads; ratio: per round "
      "against A, then the median" % (rounds, secs, conns, wrk_threads))
print("| config | changes/batch | changes/s | batches/s | p99 ms | vs file store | "
      "commit ms/group | records/group | groups/s (all) | writer busy |")
print("|---|---|---|---|---|---|---|---|---|---|")
names = {"A": "A file store, 1 gateway", "B": "B postgres, 1 replica",
         "C": "C postgres, 2 replicas + HAProxy", "D": "D postgres, 3 replicas + HAProxy"}
for r in rows:
    print("| %s | %d | %.0f | %.0f | %.1f | %.2fx | %.2f | %.1f | %.0f | %.0f %% |" % (
        names[r["config"]], r["changes_per_batch"], r["changes_per_s"], r["batches_per_s"],
        r["p99_ms"], r["ratio_vs_file"], r["commit_ms_mean"], r["group_size_mean"],
        r["groups_per_s"], 100 * r["writer_busy"]))
print("load average before: %s, after: %s" % (load_before, load_after))
print("wrote %s" % out, file=sys.stderr)
PY
