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
#
# --rtt-ms R: scaling with a round trip of R ms between each replica and PostgreSQL
# (docs/performance.md §13.2). Every replica reaches PostgreSQL through a delaying proxy of its
# own (bench/delay_proxy.c, R/2 ms each way: this kernel has no netem) and gets the same fixed
# load, wrk straight at it with CONNS_PER_REPLICA connections (no HAProxy), so the CPUs are not
# saturated; configurations B (1 replica) and D (3), ratios against B. While wrk runs,
# pg_stat_activity is sampled every 100 ms: the share of the samples of active backends that
# wait for a lock (wait_event_type Lock).
#
# usage: bench/pg_scale.sh [--seconds N] [--rounds R] [--rtt-ms R] [--out FILE]
# env:   SECONDS_PER_PHASE (20), ROUNDS (2), CONNS (64), WRK_THREADS (2), SERVER_THREADS (2),
#        BUILD (build/bench-rel), OUT (bench/results/pg_scale.json, or pg_scale_rtt.json),
#        CONNS_PER_REPLICA (8, --rtt-ms), SHARDGATE_BIN (a built shardgate instead of BUILD's),
#        PG_SCALE_CONFIGS (the configurations to run, "A B C D"; A is every ratio's baseline)
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
OUT=${OUT:-}
CONNS_PER_REPLICA=${CONNS_PER_REPLICA:-8}
RTT_MS=
SIZES=(1 100)
read -r -a CONFIGS <<<"${PG_SCALE_CONFIGS:-A B C D}"

die() {
    echo "bench/pg_scale.sh: $*" >&2
    exit 1
}

while [ $# -gt 0 ]; do
    case $1 in
    --seconds) [ $# -ge 2 ] || die "--seconds N"; PHASE_SECONDS=$2; shift 2 ;;
    --rounds) [ $# -ge 2 ] || die "--rounds R"; ROUNDS=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || die "--out FILE"; OUT=$2; shift 2 ;;
    --rtt-ms) [ $# -ge 2 ] || die "--rtt-ms R"; RTT_MS=$2; shift 2 ;;
    *) echo "usage: bench/pg_scale.sh [--seconds N] [--rounds R] [--rtt-ms R] [--out FILE]" >&2; exit 64 ;;
    esac
done
[[ $PHASE_SECONDS =~ ^[1-9][0-9]*$ ]] || die "--seconds takes a positive integer"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "--rounds takes a positive integer"
[ -z "$RTT_MS" ] || [[ $RTT_MS =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--rtt-ms takes milliseconds"
if [ -n "$RTT_MS" ]; then
    CONFIGS=(B D)
    OUT=${OUT:-bench/results/pg_scale_rtt.json}
fi
OUT=${OUT:-bench/results/pg_scale.json}

for tool in wrk haproxy curl psql python3; do
    command -v "$tool" >/dev/null || sg_install_deps
done
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSHARDGATE_BENCH=ON >/dev/null
cmake --build "$BUILD" -j 2 --target shardgate delay_proxy >/dev/null
BIN=${SHARDGATE_BIN:-$BUILD/gateway/shardgate}
DELAY_PROXY=$BUILD/bench/delay_proxy

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

# start_delay_proxy N: bench/delay_proxy.c in front of PostgreSQL for replica N; sets
# REPLICA_STORE to the store URL through it.
start_delay_proxy() {
    local log="$tmp/proxy-$1.log" pid i port=
    rm -f "$log" # the last phase's names another port
    "$DELAY_PROXY" 0 "$PG_PORT" "$(python3 -c "print(int($RTT_MS * 500))")" >"$log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    for ((i = 0; i < 100; i++)); do
        port=$(sed -n 's/^listening \([0-9]*\)$/\1/p' "$log" 2>/dev/null || true)
        [ -z "$port" ] || break
        sleep 0.05
    done
    [ -n "$port" ] || die "delay proxy $1 did not listen: $(cat "$log")"
    REPLICA_STORE=${STORE/:$PG_PORT\//:$port/}
}

# start_replica N: a gateway on the shared PostgreSQL (through its own delay proxy with
# --rtt-ms); appends its base URL to GW_URLS.
start_replica() {
    local log="$tmp/gw-$1.log" pid port
    REPLICA_STORE=$STORE
    [ -z "$RTT_MS" ] || start_delay_proxy "$1"
    "$BIN" serve --conf conf/dispatch.env --shards input/shards.json --store "$REPLICA_STORE" \
        --listen 127.0.0.1:0 --threads "$SERVER_THREADS" --no-token </dev/null 2>"$log" &
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

# load_per_replica ROUND CONFIG SIZE OUT: wrk at every replica at once, CONNS_PER_REPLICA
# connections each, while pg_stat_activity is sampled into $tmp/locks; OUT gets one summary
# line of them all (counts and rates summed, latencies the worst).
load_per_replica() {
    local round=$1 config=$2 size=$3 out=$4 u k=0 wpids=() spid
    rm -f "$tmp/locks" "$tmp"/wrk-*.out
    (while :; do
        "${PSQL[@]}" -At -F '|' -c "SELECT count(*) FILTER (WHERE wait_event_type = 'Lock'), \
            count(*) FILTER (WHERE state = 'active') FROM pg_stat_activity WHERE \
            datname = 'shardgate' AND pid <> pg_backend_pid() AND backend_type = 'client backend'" \
            >>"$tmp/locks" 2>/dev/null || true
        sleep 0.1
    done) &
    spid=$!
    for u in "${GW_URLS[@]}"; do
        k=$((k + 1))
        wrk -t1 -c"$CONNS_PER_REPLICA" -d"${PHASE_SECONDS}s" --timeout 10s --latency \
            -s bench/http_post.lua "$u" -- "$size" "r$round$config$size-$k" key \
            >"$tmp/wrk-$k.out" 2>&1 &
        wpids+=($!)
    done
    for u in "${wpids[@]}"; do wait "$u" || die "wrk failed: $(cat "$tmp"/wrk-*.out)"; done
    kill "$spid" 2>/dev/null || true
    wait "$spid" 2>/dev/null || true
    python3 - "$tmp"/wrk-*.out >"$out" <<'PY'
import json, sys
rows = [[json.loads(l) for l in open(f) if l.startswith('{"changes_per_batch"')][-1]
        for f in sys.argv[1:]]
out = dict(rows[0])
for k in ("requests", "non_200", "errors", "requests_per_s", "changes_per_s"):
    out[k] = sum(r[k] for r in rows)
for k in ("p50_ms", "p99_ms", "p999_ms", "max_ms", "seconds"):
    out[k] = max(r[k] for r in rows)
print(json.dumps(out))
PY
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
        [ "$config" = B ] || [ -n "$RTT_MS" ] || start_haproxy
        ;;
    esac
    if [ -n "$RTT_MS" ]; then
        echo "== round $round, $config ($replicas replica(s), ${RTT_MS} ms round trip to the database), $size change(s) per batch, ${PHASE_SECONDS}s, $CONNS_PER_REPLICA connections each" >&2
        load_per_replica "$round" "$config" "$size" "$wrk_out"
    else
        echo "== round $round, $config ($replicas replica(s)), $size change(s) per batch, ${PHASE_SECONDS}s -> $TARGET" >&2
        wrk -t"$WRK_THREADS" -c"$CONNS" -d"${PHASE_SECONDS}s" --timeout 10s --latency \
            -s bench/http_post.lua "$TARGET" -- "$size" "r$round$config$size" key >"$wrk_out" 2>&1 ||
            die "wrk failed: $(cat "$wrk_out")"
    fi
    if grep -q 'Non-2xx or 3xx responses' "$wrk_out"; then
        die "non-2xx answers: $(grep 'Non-2xx' "$wrk_out")"
    fi
    grep -q '^{"changes_per_batch"' "$wrk_out" || die "no summary from wrk: $(cat "$wrk_out")"
    python3 - "$round" "$config" "$replicas" "$size" "$PHASE_SECONDS" "$wrk_out" "$tmp/locks" \
        "${RTT_MS:-0}" "${GW_URLS[@]}" >>"$tmp/phases.jsonl" <<'PY' || die "phase check failed (see above)"
import json, os, sys, urllib.request
rnd, config, replicas, size, secs, wrk_out, locks, rtt, urls = (sys.argv[1], sys.argv[2],
    int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7],
    float(sys.argv[8]), sys.argv[9:])
samples = [tuple(map(int, l.split("|"))) for l in open(locks)] if os.path.exists(locks) else []
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
    "replicas": replicas, "haproxy": config in ("C", "D") and not rtt, "changes_per_batch": size,
    "rtt_ms": rtt,
    # pg_stat_activity samples: backends waiting for a lock / active backends (with --rtt-ms)
    "lock_wait_samples": sum(s[0] for s in samples), "active_samples": sum(s[1] for s in samples),
    "lock_wait_share": (sum(s[0] for s in samples) / sum(s[1] for s in samples)
                        if samples and sum(s[1] for s in samples) else None),
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
        order=() sizes=("${SIZES[1]}" "${SIZES[0]}")
        for ((k = ${#CONFIGS[@]} - 1; k >= 0; k--)); do order+=("${CONFIGS[k]}"); done
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
rtt = phases[0]["rtt_ms"]
base = "B" if rtt else "A"  # with --rtt-ms: against 1 replica with the same round trip
by = {(p["round"], p["config"], p["changes_per_batch"]): p for p in phases}
med = statistics.median
rows = []
for size in sorted({p["changes_per_batch"] for p in phases}):
    for config in ("A", "B", "C", "D"):
        ps = [p for p in phases if p["config"] == config and p["changes_per_batch"] == size]
        if not ps:
            continue
        ratios = [p["wrk"]["changes_per_s"] / by[(p["round"], base, size)]["wrk"]["changes_per_s"]
                  for p in ps]
        shares = [p["lock_wait_share"] for p in ps if p["lock_wait_share"] is not None]
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
            "lock_wait_share": med(shares) if shares else None,
            "changes_per_s_per_round": [p["wrk"]["changes_per_s"] for p in ps]})
doc = {"bench": "pg_scale", "seconds_per_phase": int(secs), "rounds": int(rounds),
       "connections": int(conns), "wrk_threads": int(wrk_threads),
       "server_threads": int(server_threads), "cpus": os.cpu_count(), "rtt_ms": rtt,
       "loadavg_before": load_before, "loadavg_after": load_after,
       "summary": rows, "phases": phases}
with open(out, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
print("medians of %s rounds, %s s per phase, wrk %s connections / %s threads; ratio: per round "
      "against A, then the median" % (rounds, secs, conns, wrk_threads))
print("| config | changes/batch | changes/s | batches/s | p99 ms | vs %s | "
      "commit ms/group | records/group | groups/s (all) | writer busy | lock waits |"
      % ("1 replica" if rtt else "file store"))
print("|---|---|---|---|---|---|---|---|---|---|---|")
names = {"A": "A file store, 1 gateway", "B": "B postgres, 1 replica",
         "C": "C postgres, 2 replicas + HAProxy", "D": "D postgres, 3 replicas + HAProxy"}
if rtt:
    names.update(B="B postgres, 1 replica, %g ms round trip" % rtt,
                 D="D postgres, 3 replicas, %g ms round trip" % rtt)
for r in rows:
    share = r["lock_wait_share"]
    print("| %s | %d | %.0f | %.0f | %.1f | %.2fx | %.2f | %.1f | %.0f | %.0f %% | %s |" % (
        names[r["config"]], r["changes_per_batch"], r["changes_per_s"], r["batches_per_s"],
        r["p99_ms"], r["ratio_vs_file"], r["commit_ms_mean"], r["group_size_mean"],
        r["groups_per_s"], 100 * r["writer_busy"],
        "-" if share is None else "%.1f %%" % (100 * share)))
print("load average before: %s, after: %s" % (load_before, load_after))
print("wrote %s" % out, file=sys.stderr)
PY
