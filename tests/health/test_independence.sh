#!/usr/bin/env bash
# health_independence: shardgate-health shares no code with ring/ or gateway/ (docs/operations.md §1):
# no ring_/gw_ symbol in the binary, no #include reaching into ring/ or gateway/, no include
# directory or link of theirs in its build.
set -u
bin=$1
src=$2      # health/ source dir
build=$3    # top of the build tree (for compile_commands.json)
fail=0
say() { echo "$1 $2"; [ "$1" = ok ] || fail=1; }

if ! command -v nm >/dev/null; then
    say FAIL "nm not found"
fi
syms=$(nm -a "$bin" 2>&1) || say FAIL "nm failed: $syms"
bad=$(printf '%s\n' "$syms" | grep -E '[[:space:]](ring|gw)_[A-Za-z0-9_]*$' || true)
[ -z "$bad" ] && say ok "no ring_/gw_ symbols in $bin" || say FAIL "foreign symbols: $bad"
hc=$(printf '%s\n' "$syms" | grep -cE '[[:space:]]hc_ring_build$' || true)
[ "$hc" -ge 1 ] && say ok "the binary has its own hc_ring_build" || say FAIL "hc_ring_build missing (stripped binary?)"

inc=$(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^">]*/)?(ring|gateway)/' "$src"/*.c "$src"/*.h || true)
up=$(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"\.\./' "$src"/*.c "$src"/*.h || true)
[ -z "$inc$up" ] && say ok "no #include of ring/ or gateway/ headers in health/" || say FAIL "includes: $inc $up"

nocomment=""
for f in "$src"/*.c "$src"/*.h; do
    head -n 1 "$f" | grep -qE '^/\* .+ \*/$' || nocomment="$nocomment $f"
done
[ -z "$nocomment" ] && say ok "every health/ file opens with a one-line comment" ||
    say FAIL "no one-line opening comment:$nocomment"

cm=$(grep -nE '(ring|gateway)' "$src/CMakeLists.txt" | grep -vE '^[0-9]+:#' | grep -vE 'ring\.c' || true)
[ -z "$cm" ] && say ok "health/CMakeLists.txt names no ring/gateway target" || say FAIL "cmake: $cm"

if [ -f "$build/compile_commands.json" ]; then
    leak=$(python3 - "$build/compile_commands.json" "$src" <<'PY'
import json, os, sys
src = os.path.realpath(sys.argv[2])
root = os.path.dirname(src)
for e in json.load(open(sys.argv[1])):
    if os.path.realpath(e["file"]).startswith(src + os.sep):
        cmd = e.get("command") or " ".join(e.get("arguments", []))
        for d in ("ring", "gateway"):
            if os.path.join(root, d) in cmd:
                print(e["file"], "uses", d)
PY
)
    [ -z "$leak" ] && say ok "no ring/ or gateway/ include path when compiling health/" || say FAIL "$leak"
fi
exit $fail
