#!/usr/bin/env bash
# The gateway's layering holds (README.md, Layout; docs/decisions.md §28):
#   core < store < http < cli, and a file includes headers of its own layer or of lower ones;
#   core/ includes neither <microhttpd.h> nor <pthread.h>; store/ does not include <microhttpd.h>;
#   no "../" includes (they would step around the layers); every source file lives in a layer;
#   a layer's sub-folders are its parts (store/file/, store/pg/), which never include each
#   other's headers; every part may include shared/ (what the parts have in common), which
#   includes no other part, and of the top of store/ only what the face names, never the store
#   itself (store.h, store_ops.h, store_state.h) or its views (view.h); http/ includes no header
#   of store/shared/, store/file/ or store/pg/ (it reaches either store through store.h), and
#   nothing outside store/ includes store_state.h or store_ops.h (what the store holds, and its
#   operations).
# usage: check_layers.sh ROOT     prints every violation, then RESULT: OK or RESULT: BAD
#        check_layers.sh --self-test   proves each rule catches a planted violation
set -u
LAYERS=(core store http cli)

rank_of() { # layer name -> its rank, or nothing
    local i
    for i in "${!LAYERS[@]}"; do [ "${LAYERS[$i]}" = "$1" ] && echo "$i"; done
}

# part_of LAYER_DIR FILE -> the sub-folder of the layer holding FILE, or nothing at its top
part_of() {
    local rel="${2#$1/}"
    [[ "$rel" == */* ]] && echo "${rel%%/*}"
}

# check ROOT: prints one line per violation; returns the number found (capped at 255).
check() {
    local gw="$1/gateway" bad=0 f layer rank inc owner orank found part opart
    for f in "$gw"/*.[ch]; do
        [ -e "$f" ] || continue
        echo "${f#$1/}: outside every layer (core/, store/, http/, cli/)"
        bad=$((bad + 1))
    done
    for layer in "${LAYERS[@]}"; do
        rank=$(rank_of "$layer")
        while IFS= read -r f; do
            part=$(part_of "$gw/$layer" "$f")
            if [ "$rank" -eq 0 ] && grep -Eq '^#[[:space:]]*include[[:space:]]*<(microhttpd|pthread)\.h>' "$f"; then
                echo "${f#$1/}: core/ includes microhttpd.h or pthread.h"
                bad=$((bad + 1))
            fi
            if [ "$rank" -eq 1 ] && grep -Eq '^#[[:space:]]*include[[:space:]]*<microhttpd\.h>' "$f"; then
                echo "${f#$1/}: store/ includes microhttpd.h"
                bad=$((bad + 1))
            fi
            while IFS= read -r inc; do
                if [[ "$inc" == */* ]]; then
                    echo "${f#$1/}: includes \"$inc\": a path steps around the layers"
                    bad=$((bad + 1))
                    continue
                fi
                owner=""
                for l in "${LAYERS[@]}"; do
                    found=$(find "$gw/$l" -name "$inc" -print -quit 2>/dev/null)
                    [ -n "$found" ] && owner="$l" && opart=$(part_of "$gw/$l" "$found")
                done
                [ -n "$owner" ] || continue # ring.h, or a header of the same name elsewhere
                orank=$(rank_of "$owner")
                if [ "$orank" -gt "$rank" ]; then
                    echo "${f#$1/}: includes $owner/$inc, a layer above $layer/"
                    bad=$((bad + 1))
                elif [ "$owner" = "$layer" ] && [ -n "$part" ] && [ -n "$opart" ] &&
                    [ "$part" != "$opart" ] && [ "$opart" != "shared" ]; then
                    echo "${f#$1/}: includes $layer/$opart/$inc, another part of $layer/"
                    bad=$((bad + 1))
                elif [ "$layer" = "http" ] && [ "$owner" = "store" ] && [ -n "$opart" ]; then
                    echo "${f#$1/}: includes store/$opart/$inc: http/ reaches a store through store.h"
                    bad=$((bad + 1))
                elif [ "$owner" = "store" ] && [ "$layer" != "store" ] &&
                    { [ "$inc" = "store_state.h" ] || [ "$inc" = "store_ops.h" ]; }; then
                    echo "${f#$1/}: includes store/$inc: what the store holds is its own (store.h)"
                    bad=$((bad + 1))
                elif [ "$owner" = "$layer" ] && [ "$part" = "shared" ] && [ -z "$opart" ] &&
                    [[ "$inc" =~ ^(store|store_ops|store_state|view)\.h$ ]]; then
                    echo "${f#$1/}: includes $layer/$inc: shared/ stands below the store and its views"
                    bad=$((bad + 1))
                fi
            done < <(sed -n 's/^#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
        done < <(find "$gw/$layer" -name '*.[ch]' 2>/dev/null | sort)
    done
    return $((bad > 255 ? 255 : bad))
}

# Plants one violation in a minimal tree; the check must find it.
expect_caught() {
    local what="$1" file="$2" line="$3" tmp
    tmp=$(mktemp -d)
    mkdir -p "$tmp/gateway/core" "$tmp/gateway/store" "$tmp/gateway/http" "$tmp/gateway/cli"
    echo '#include "buf.h"' >"$tmp/gateway/store/journal.c"
    mkdir -p "$tmp/gateway/store/file/index" "$tmp/gateway/store/pg" "$tmp/gateway/store/shared"
    touch "$tmp/gateway/core/buf.h" "$tmp/gateway/store/journal.h" "$tmp/gateway/http/request.h" \
        "$tmp/gateway/store/file/index/idempotency.h" "$tmp/gateway/store/pg/pg_store.h" \
        "$tmp/gateway/store/store_state.h" "$tmp/gateway/store/store.h" \
        "$tmp/gateway/store/view.h" "$tmp/gateway/store/shared/records.h"
    echo '#include "journal.h"' >"$tmp/gateway/store/pg/pg_store.c"
    mkdir -p "$(dirname "$tmp/gateway/$file")"
    echo "$line" >>"$tmp/gateway/$file"
    if check "$tmp" >/dev/null; then
        echo "self-test: NOT caught: $what"
        rm -rf "$tmp"
        return 1
    fi
    rm -rf "$tmp"
    echo "self-test: caught: $what"
}

self_test() {
    local tmp fails=0
    tmp=$(mktemp -d)
    mkdir -p "$tmp/gateway/core" "$tmp/gateway/store/shared" "$tmp/gateway/store/pg"
    echo '#include "buf.h"' >"$tmp/gateway/store/journal.c"
    touch "$tmp/gateway/core/buf.h" "$tmp/gateway/store/shared/records.h" "$tmp/gateway/store/chain.h"
    echo '#include "records.h"' >"$tmp/gateway/store/pg/pg_epochs.c"
    echo '#include "chain.h"' >"$tmp/gateway/store/shared/records.c"
    check "$tmp" || { echo "self-test: a clean tree fails"; fails=1; }
    rm -rf "$tmp"
    expect_caught "core includes pthread.h" core/buf.c '#include <pthread.h>' || fails=1
    expect_caught "core includes microhttpd.h" core/buf.c '#include <microhttpd.h>' || fails=1
    expect_caught "store includes microhttpd.h" store/commit.c '#include <microhttpd.h>' || fails=1
    expect_caught "core includes a store header" core/batch.c '#include "journal.h"' || fails=1
    expect_caught "store includes an http header" store/ledger.c '#include "request.h"' || fails=1
    expect_caught "a path include" http/x.c '#include "../core/buf.h"' || fails=1
    expect_caught "a file outside the layers" serve.c '#include "buf.h"' || fails=1
    expect_caught "a store part includes another's header" store/pg/pg_commit.c \
        '#include "idempotency.h"' || fails=1
    expect_caught "a store part's file includes an http header" store/file/index/idem_db.c \
        '#include "request.h"' || fails=1
    expect_caught "shared/ includes a part's header" store/shared/records.c \
        '#include "pg_store.h"' || fails=1
    expect_caught "shared/ includes the store's face" store/shared/records.c \
        '#include "store.h"' || fails=1
    expect_caught "shared/ includes the views" store/shared/records.c '#include "view.h"' ||
        fails=1
    expect_caught "http includes a header of shared/" http/handle_feed.c \
        '#include "records.h"' || fails=1
    expect_caught "http includes a store part's header" http/handle_feed.c \
        '#include "idempotency.h"' || fails=1
    expect_caught "http includes what the store holds" http/handle_feed.c \
        '#include "store_state.h"' || fails=1
    [ "$fails" -eq 0 ] && echo "RESULT: OK" || echo "RESULT: BAD"
    return "$fails"
}

if [ "${1:-}" = "--self-test" ]; then
    self_test
    exit $?
fi
[ $# -eq 1 ] || { echo "usage: check_layers.sh ROOT | --self-test" >&2; exit 64; }
if check "$1"; then
    echo "RESULT: OK"
else
    echo "RESULT: BAD"
    exit 1
fi
