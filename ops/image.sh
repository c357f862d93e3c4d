#!/usr/bin/env bash
# The container image and the Debian package, built and run for real
# (docs/operations.md, Packaging and containers).
#
#   ops/image.sh build   builds the Dockerfile's four role images, shardgate-gateway,
#                        shardgate-health, shardgate-database and shardgate-proxy (podman, or
#                        docker when its daemon answers), making the local debian:12 base
#                        image when missing, and prints each image's size
#   ops/image.sh test    build, then runs docker-compose.yml (the gateway and the health
#                        service over one state volume), POSTs the worked example, expects the golden
#                        receipt and a passing health verdict, and removes everything
#   ops/image.sh deb     builds the four .debs (cpack: shardgate, libshardgate1,
#                        libshardgate-dev, python3-shardgate), checks their dependencies and
#                        contents, installs them in a fresh debian:12 container: the worked
#                        example served, health, shardgate-probe, and the library's tests
#   ops/image.sh cluster build, then runs docker-compose.yml's `cluster` profile in containers
#                        (PostgreSQL with passwords, three gateways with tokens from secret
#                        files, HAProxy, health as the read-only role): the golden receipt
#                        with the token, 401 without, a membership change through HAProxy,
#                        health passing; and removes everything
#   ops/image.sh secrets makes the compose file's four token files at their default paths
#                        (state/gateway-secrets/, state/cluster-secrets/) when absent: 0600,
#                        owned by the images' shardgate uid
#   ops/image.sh all     build, test, cluster, deb
#
# `test` runs docker-compose.yml itself with podman-compose (bridge network, ports published on
# 127.0.0.1 only, free ports chosen per run); `deb` uses a plain container with host
# networking, its server listening on 127.0.0.1. Everything a run creates is removed on exit,
# pass or fail (trap). Prints "RESULT: OK" or fails with the reason.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$SHARDGATE_ROOT"

# The Dockerfile's final stages (one per service role) and the image each is tagged as.
ROLES=(gateway health database proxy)
IMAGE=shardgate-gateway:latest
GOLDEN=tests/golden/sample-0001.receipt.v2.json
RUN_ID="sg-$$"
TOOL=""
CLEANUP=()

cleanup() {
    local c
    for c in "${CLEANUP[@]}"; do eval "$c" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

FAIL_HOOK=""
fail() {
    echo "FAIL: $*" >&2
    [ -z "$FAIL_HOOK" ] || eval "$FAIL_HOOK" >&2 || true
    exit 1
}

# cluster_logs PROJECT: the last lines of each container's log, for a failure's report.
cluster_logs() {
    local c
    for c in $("$TOOL" ps -a -q --filter "label=com.docker.compose.project=$1"); do
        echo "--- $("$TOOL" inspect -f '{{.Name}} (restarts {{.RestartCount}}, {{.State.Status}})' "$c")"
        "$TOOL" logs --tail 8 "$c" 2>&1 | sed 's/^/    /'
    done
}

# A free 127.0.0.1 port (host networking: the containers bind it directly).
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_http URL STATUS SECONDS: polls until URL answers STATUS (bounded).
wait_http() {
    local url=$1 want=$2 i got=""
    for ((i = 0; i < $3 * 5; i++)); do
        got=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url" || true)
        [ "$got" = "$want" ] && return 0
        sleep 0.2
    done
    fail "$url answered ${got:-nothing}, expected $want within $3 s"
}

# post_example PORT OUT [TOKEN]: POSTs the worked example, writes the body to OUT, prints the
# status.
post_example() {
    local auth=()
    [ -z "${3:-}" ] || auth=(-H "Authorization: Bearer $3")
    curl -sS -o "$2" -w '%{http_code}' --max-time 30 -X POST "http://127.0.0.1:$1/v1/batches" \
        -H 'Content-Type: application/json' -H 'Idempotency-Key: sample-0001' "${auth[@]}" \
        --data-binary @input/changes.json
}

# expect_golden PORT [TOKEN]: the worked example answers the golden receipt, twice (the replay
# too).
expect_golden() {
    local out status n
    out=$(mktemp)
    CLEANUP+=("rm -f $out")
    for n in first replay; do
        status=$(post_example "$1" "$out" "${2:-}")
        [ "$status" = 200 ] || fail "POST worked example ($n): HTTP $status: $(cat "$out")"
        cmp -s "$out" "$GOLDEN" || fail "POST worked example ($n): receipt differs from $GOLDEN"
    done
    echo "ok: the worked example answered the golden receipt (and its replay)"
}

cmd_build() {
    TOOL=$(sg_container_tool)
    sg_base_image "$TOOL"
    local net=()
    [ "$TOOL" = podman ] && net=(--network host)
    local role size
    for role in "${ROLES[@]}"; do
        echo "== image: $TOOL build --target $role -t shardgate-$role:latest" >&2
        "$TOOL" build -q "${net[@]}" --target "$role" -t "shardgate-$role:latest" . >/dev/null
        size=$("$TOOL" image inspect -f '{{.Size}}' "shardgate-$role:latest")
        echo "image shardgate-$role:latest $((size / 1000000)) MB"
    done
    "$TOOL" run --rm "$IMAGE" shardgate --version
    images_hold_their_role
}

# images_hold_their_role: each image has its own program and not the others' (nor python3,
# PostgreSQL or HAProxy where its service does not run them).
images_hold_their_role() {
    local role absent present held uid
    for role in "${ROLES[@]}"; do
        case $role in
        gateway) present=shardgate absent="shardgate-health python3 postgres haproxy" ;;
        health) present=shardgate-health absent="shardgate python3 postgres haproxy" ;;
        database) present=pg_isready absent="shardgate shardgate-health python3 haproxy" ;;
        proxy) present=haproxy absent="shardgate shardgate-health python3 pg_isready" ;;
        esac
        "$TOOL" run --rm "shardgate-$role:latest" sh -c "command -v $present" >/dev/null ||
            fail "shardgate-$role:latest lacks $present"
        [ "$role" = database ] || absent="$absent /usr/lib/postgresql"
        held=$("$TOOL" run --rm "shardgate-$role:latest" sh -c \
            "for p in $absent; do command -v \$p || ls -d \$p; done 2>/dev/null; true" | tr '\n' ' ')
        [ -z "$held" ] || fail "shardgate-$role:latest holds what its service does not run: $held"
    done
    echo "ok: each image holds its own service's program and none of the others'"
    # One user per service: the gateway's shardgate, the health service's shardgate-health (in
    # the group shardgate, which reads the journal), both known to the database image, which
    # gives each its role's password file (docs/operations.md §9.2).
    local huid ids
    uid=$("$TOOL" run --rm "$IMAGE" id -u shardgate)
    huid=$("$TOOL" run --rm shardgate-health:latest id -u)
    [ "$huid" != "$uid" ] || fail "shardgate-health:latest runs as the gateway's uid $uid"
    ids=$("$TOOL" run --rm shardgate-health:latest sh -c 'id -un; id -Gn | tr " " "\n" | sort | tr "\n" " "')
    [ "$ids" = "shardgate-health"$'\n'"shardgate shardgate-health " ] ||
        fail "shardgate-health:latest: not the user shardgate-health in the groups shardgate and its own: $ids"
    [ "$("$TOOL" run --rm shardgate-health:latest getent group shardgate | cut -d: -f3)" = "$uid" ] ||
        fail "shardgate-health:latest: the group shardgate is not gid $uid"
    [ "$("$TOOL" run --rm shardgate-database:latest sh -c 'id -u shardgate; id -u shardgate-health' |
        tr '\n' ' ')" = "$uid $huid " ] ||
        fail "shardgate-database:latest: users shardgate and shardgate-health are not uids $uid and $huid"
    echo "ok: the gateway runs as shardgate ($uid), the health service as shardgate-health ($huid)"
}

# compose ARGS...: podman-compose, or docker's compose, on docker-compose.yml.
compose() {
    if [ "$TOOL" = podman ]; then
        podman-compose -f docker-compose.yml "$@"
    elif docker compose version >/dev/null 2>&1; then
        docker compose -f docker-compose.yml "$@"
    else
        docker-compose -f docker-compose.yml "$@"
    fi
}

# container_of PROJECT SERVICE: the id of a compose service's container (compose labels).
container_of() {
    "$TOOL" ps -a -q --filter "label=com.docker.compose.project=$1" \
        --filter "label=com.docker.compose.service=$2" | head -n 1
}

cmd_test() {
    [ -n "$TOOL" ] || TOOL=$(sg_container_tool)
    local proj="$RUN_ID" gw hc etc=/etc/shardgate verdict dir uid status
    dir=$(mktemp -d)
    uid=$("$TOOL" run --rm "$IMAGE" id -u shardgate)
    export SHARDGATE_GATEWAY_PORT SHARDGATE_HEALTH_PORT SHARDGATE_GATEWAY_TOKEN_FILE \
        SHARDGATE_GATEWAY_ADMIN_TOKEN_FILE
    SHARDGATE_GATEWAY_PORT=$(free_port)
    SHARDGATE_HEALTH_PORT=$(free_port)
    SHARDGATE_GATEWAY_TOKEN_FILE=$(secret_file "$dir" token "$uid")
    SHARDGATE_GATEWAY_ADMIN_TOKEN_FILE=$(secret_file "$dir" admin-token "$uid")
    CLEANUP+=("compose -p $proj down -v" "$TOOL network rm -f ${proj}_default"
        "$TOOL volume rm -f ${proj}_state" "rm -rf $dir")
    echo "== compose: docker-compose.yml as project $proj (ports $SHARDGATE_GATEWAY_PORT, $SHARDGATE_HEALTH_PORT)" >&2
    # The default services by name: podman-compose 1.0.3 knows no profiles and would start
    # the `cluster` profile's services too.
    compose -p "$proj" up -d --no-build gateway health >/dev/null 2>&1 || fail "compose up"
    gw=$(container_of "$proj" gateway)
    hc=$(container_of "$proj" health)
    [ -n "$gw" ] && [ -n "$hc" ] || fail "compose up did not create both containers"
    wait_http "http://127.0.0.1:$SHARDGATE_GATEWAY_PORT/readyz" 200 60
    healthcheck_passes "$gw" gateway
    status=$(post_example "$SHARDGATE_GATEWAY_PORT" "$dir/answer.json")
    [ "$status" = 401 ] || fail "POST without the token to the compose gateway: HTTP $status, not 401"
    echo "ok: the compose gateway needs its token: without it, 401"
    expect_golden "$SHARDGATE_GATEWAY_PORT" "$(cat "$SHARDGATE_GATEWAY_TOKEN_FILE")"
    wait_http "http://127.0.0.1:$SHARDGATE_HEALTH_PORT/healthz" 200 60
    verdict=$("$TOOL" exec "$hc" shardgate-health check --conf $etc/dispatch.env \
        --shards $etc/shards.json --journal /var/lib/shardgate/journal.jsonl) ||
        fail "health check in the health container: $verdict"
    case $verdict in '{"status":"pass"'*) ;; *) fail "health check verdict: $verdict" ;; esac
    echo "ok: the health container reports pass: $verdict"
    healthcheck_passes "$hc" health
    "$TOOL" exec "$hc" sh -c ': >> /var/lib/shardgate/journal.jsonl' 2>/dev/null &&
        fail "the health container can write the journal (the volume must be read-only)"
    "$TOOL" stop -t 30 "$gw" >/dev/null 2>&1
    [ "$("$TOOL" inspect -f '{{.State.ExitCode}}' "$gw")" = 0 ] || fail "gateway did not exit 0"
    echo "ok: the gateway container drained and exited 0 on stop"
}

# healthcheck_passes CONTAINER SERVICE: the service's compose healthcheck, run once by hand
# (podman schedules them with systemd timers, which this sandbox lacks; docs/operations.md
# §6.1). Docker runs them itself.
healthcheck_passes() {
    [ "$TOOL" = podman ] || return 0
    "$TOOL" healthcheck run "$1" >/dev/null || fail "the $2 service's compose healthcheck fails"
    echo "ok: the $2 service's compose healthcheck passes"
}

# secret_file DIR NAME UID: a random token in DIR/NAME, mode 0600, owned by UID (the image's
# shardgate user, which reads it inside the container); prints the path.
secret_file() {
    (umask 077 && head -c 24 /dev/urandom | base64 >"$1/$2")
    chown "$3" "$1/$2"
    echo "$1/$2"
}

# cmd_secrets: the four token files of docker-compose.yml at their default paths, each made
# once (an existing file is the operator's and is kept), for the uid the images run as.
cmd_secrets() {
    local uid f
    uid=$(sed -n 's/^ARG SHARDGATE_UID=//p' Dockerfile)
    [ -n "$uid" ] || fail "Dockerfile: no ARG SHARDGATE_UID=<uid>"
    mkdir -p state/gateway-secrets state/cluster-secrets
    for f in state/gateway-secrets/token state/gateway-secrets/admin-token \
        state/cluster-secrets/token state/cluster-secrets/admin-token; do
        if [ ! -s "$f" ]; then
            secret_file "$(dirname "$f")" "$(basename "$f")" "$uid" >/dev/null
            echo "made $f (0600, uid $uid)"
        fi
    done
}

cmd_cluster() {
    [ -n "$TOOL" ] || TOOL=$(sg_container_tool)
    local proj="$RUN_ID-cluster" dir uid out status epoch etag admin i
    dir=$(mktemp -d)
    out="$dir/answer.json"
    uid=$("$TOOL" run --rm "$IMAGE" id -u shardgate)
    export SHARDGATE_CLUSTER_TOKEN_FILE SHARDGATE_CLUSTER_ADMIN_TOKEN_FILE SHARDGATE_CLUSTER_PORT \
        SHARDGATE_CLUSTER_HEALTH_PORT
    SHARDGATE_CLUSTER_TOKEN_FILE=$(secret_file "$dir" token "$uid")
    SHARDGATE_CLUSTER_ADMIN_TOKEN_FILE=$(secret_file "$dir" admin-token "$uid")
    SHARDGATE_CLUSTER_PORT=$(free_port)
    SHARDGATE_CLUSTER_HEALTH_PORT=$(free_port)
    CLEANUP+=("compose -p $proj down -v" "$TOOL network rm -f ${proj}_default"
        "$TOOL volume rm -f ${proj}_cluster-state" "rm -rf $dir")
    FAIL_HOOK="cluster_logs $proj"
    echo "== compose: the cluster profile as project $proj (ports $SHARDGATE_CLUSTER_PORT, $SHARDGATE_CLUSTER_HEALTH_PORT)" >&2
    # By name: podman-compose 1.0.3 knows no profiles (the dependencies come along).
    compose -p "$proj" up -d --no-build haproxy cluster-health >/dev/null 2>&1 ||
        fail "compose up of the cluster profile"
    wait_http "http://127.0.0.1:$SHARDGATE_CLUSTER_PORT/readyz" 200 90
    healthcheck_passes "$(container_of "$proj" postgres)" postgres
    expect_golden "$SHARDGATE_CLUSTER_PORT" "$(cat "$SHARDGATE_CLUSTER_TOKEN_FILE")"
    status=$(post_example "$SHARDGATE_CLUSTER_PORT" "$out")
    [ "$status" = 401 ] || fail "POST without the token through HAProxy: HTTP $status, not 401"
    echo "ok: without the token, 401"
    wait_http "http://127.0.0.1:$SHARDGATE_CLUSTER_HEALTH_PORT/healthz" 200 60
    echo "ok: the cluster's health service, as shardgate_ro, reports pass"
    local hc pg=/var/lib/shardgate-cluster/pg
    hc=$(container_of "$proj" cluster-health)
    "$TOOL" exec "$hc" cat "$pg/shardgate.pgpass" >/dev/null 2>&1 &&
        fail "the health container reads the owner role's password file"
    "$TOOL" exec "$hc" sh -c "test -r $pg/shardgate_ro.pgpass && ! test -r $pg/shardgate.pgpass" ||
        fail "the health container: its own password file unreadable, or the owner's readable"
    echo "ok: the health container reads its role's secret and not the owner's"
    # The If-Match change of docs/operations.md §7, through HAProxy, with the admin token.
    admin=(-H "Authorization: Bearer $(cat "$SHARDGATE_CLUSTER_ADMIN_TOKEN_FILE")")
    etag=$(curl -sS -D - -o /dev/null --max-time 30 "${admin[@]}" \
        "http://127.0.0.1:$SHARDGATE_CLUSTER_PORT/v1/admin/membership" |
        sed -n 's/^etag: \(.*\)\r$/\1/Ip' || true)
    [ -n "$etag" ] || fail "GET /v1/admin/membership through HAProxy: no ETag"
    status=$(curl -sS -o "$out" -w '%{http_code}' --max-time 30 -X PUT "${admin[@]}" \
        -H "If-Match: $etag" -H 'Content-Type: application/json' \
        --data-binary @tests/plan/shards-d-online.json \
        "http://127.0.0.1:$SHARDGATE_CLUSTER_PORT/v1/admin/membership" || true)
    [ "$status" = 200 ] || fail "PUT /v1/admin/membership through HAProxy: HTTP $status: $(cat "$out")"
    epoch=$(sed -n 's/.*"changed":true,"epoch":"\([0-9a-f]*\)".*/\1/p' "$out")
    [ -n "$epoch" ] || fail "PUT /v1/admin/membership changed nothing: $(cat "$out")"
    for i in 1 2 3 4 5 6; do # round robin over the three replicas, twice
        wait_body "http://127.0.0.1:$SHARDGATE_CLUSTER_PORT/v1/ring" "\"epoch\":\"$epoch\"" 10 \
            "$(cat "$SHARDGATE_CLUSTER_TOKEN_FILE")"
    done
    echo "ok: the membership change reached every replica (epoch $epoch)"
}

# wait_body URL TEXT SECONDS TOKEN: polls until URL's body holds TEXT (bounded).
wait_body() {
    local i
    for ((i = 0; i < $3 * 5; i++)); do
        curl -s --max-time 2 -H "Authorization: Bearer $4" "$1" | grep -qF "$2" && return 0
        sleep 0.2
    done
    fail "$1 did not answer $2 within $3 s"
}

# deb_build: configures build/deb for /usr, builds the programs, runs cpack; prints the four
# packages' paths, shardgate's first.
deb_build() {
    local dir=build/deb
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DSHARDGATE_WERROR=ON -DSHARDGATE_TESTS=OFF \
        -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
    cmake --build "$dir" -j "$(nproc)" --target shardgate shardgate-health libshardgate >/dev/null
    rm -f "$dir"/*.deb
    (cd "$dir" && cpack -G DEB >/dev/null)
    local version arch name deb
    version=$(sed -n 's/^project(shardgate VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
    arch=$(dpkg --print-architecture)
    for name in shardgate_${version}_$arch libshardgate1_${version}_$arch \
        libshardgate-dev_${version}_$arch python3-shardgate_${version}_all; do
        [ -f "$dir/$name.deb" ] || fail "cpack did not produce $dir/$name.deb"
    done
    local made=("$dir"/*.deb)
    [ "${#made[@]}" = 4 ] || fail "cpack made other packages: ${made[*]}"
    # A Release build carries no test-only kill -9 points (gateway/core/crashpoint.h).
    ! grep -q SHARDGATE_TEST_CRASH_AT "$dir/gateway/shardgate" ||
        fail "$dir/gateway/shardgate: a Release build with SHARDGATE_TEST_CRASH_AT"
    for name in shardgate_${version}_$arch libshardgate1_${version}_$arch \
        libshardgate-dev_${version}_$arch python3-shardgate_${version}_all; do
        echo "$dir/$name.deb"
    done
}

# deb_has DEB FILE...: each FILE is in DEB, and DEB holds nothing else (directories aside).
deb_has() {
    local deb=$1 listed
    shift
    listed=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}' | sort)
    [ "$listed" = "$(printf '%s\n' "$@" | sort)" ] ||
        fail "$(basename "$deb") holds:"$'\n'"$listed"$'\n'"expected:"$'\n'"$(printf '%s\n' "$@" | sort)"
}

# deb_inspect SERVER LIB DEV PYTHON: each package's dependencies and exactly its files.
deb_inspect() {
    local deps lib f libdir
    libdir=$(dpkg-deb -c "$2" | awk '$6 ~ /libshardgate[.]so[.]1$/ {print $6}' | sed 's|/[^/]*$||')
    [[ $libdir == ./usr/lib/*-linux-gnu ]] || fail "$2: libshardgate.so.1 not in /usr/lib/<multiarch>"
    deps=$(dpkg-deb -f "$1" Depends)
    for lib in libssl3 libmicrohttpd12 libjansson4 libsystemd0 libzstd1 librocksdb7.8 libcurl4 adduser; do
        grep -qw "$lib" <<<"$deps" || fail "$1: Depends lacks $lib: $deps"
    done
    deb_has "$1" ./usr/bin/shardgate ./usr/bin/shardgate-health ./usr/share/man/man1/shardgate.1 \
        ./usr/share/man/man1/shardgate-health.1 ./usr/share/man/man5/shardgate-contract.5 \
        ./usr/lib/systemd/system/shardgate.service ./usr/lib/systemd/system/shardgate-health.service \
        ./usr/share/shardgate/examples/dispatch.env ./usr/share/shardgate/examples/shards.json \
        ./usr/share/shardgate/examples/changes.json \
        ./usr/share/shardgate/openapi.yaml ./usr/share/shardgate/prometheus/shardgate-rules.yml \
        ./usr/share/shardgate/prometheus/shardgate-rules.test.yml \
        ./usr/share/shardgate/grafana/shardgate.json
    deb_has "$2" "$libdir/libshardgate.so.1" "$libdir/libshardgate.so.1.0.0"
    dpkg-deb -I "$2" shlibs | grep -qx 'libshardgate 1 libshardgate1 (>= [0-9.]*)' ||
        fail "$2: no shlibs line for libshardgate.so.1"
    dpkg-deb -I "$2" postinst | grep -qx '[[:space:]]*ldconfig' || fail "$2: postinst without ldconfig"
    deb_has "$3" ./usr/include/shardgate.h "$libdir/libshardgate.so" "$libdir/pkgconfig/shardgate.pc"
    grep -qx "libshardgate1 (= $(dpkg-deb -f "$2" Version))" <<<"$(dpkg-deb -f "$3" Depends)" ||
        fail "$3: Depends is not libshardgate1 of the same version: $(dpkg-deb -f "$3" Depends)"
    f=$(cd client && git ls-files shardgate | sed 's|^|./usr/lib/python3/dist-packages/|')
    # shellcheck disable=SC2086 # one path per word
    deb_has "$4" ./usr/bin/shardgate-probe ./usr/bin/shardgate-post-batch ./usr/bin/shardgate-consume $f
    [ "$(dpkg-deb -f "$4" Architecture)" = all ] || fail "$4: not Architecture: all"
    echo "ok: $(basename "$1"): Depends: $deps; and libshardgate1, libshardgate-dev, python3-shardgate"
}

# cmd_deb: the four packages installed in a fresh debian:12 container with apt, as a user would:
# the daemon serves the worked example and health passes; the library, from libshardgate-dev,
# passes tests/library/test_libshardgate.py (built with the container's cc and pkg-config);
# python3-shardgate's shardgate-probe verifies the receipt the daemon gave.
cmd_deb() {
    [ -n "$TOOL" ] || TOOL=$(sg_container_tool)
    sg_base_image "$TOOL"
    local debs c="$RUN_ID-deb" port status
    mapfile -t debs < <(deb_build)
    deb_inspect "${debs[@]}"
    port=$(free_port)
    CLEANUP+=("$TOOL rm -f -t 0 $c")
    "$TOOL" run -d --name "$c" --network host -v "$PWD/build/deb:/tmp/debs:ro" -v "$PWD:/src:ro" \
        debian:12 sleep 900 >/dev/null
    "$TOOL" exec "$c" sh -ec 'apt-get update -q >/dev/null
        cd /tmp/debs && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
            --no-install-recommends '"$(printf './%s ' "${debs[@]##*/}")"' >/dev/null' ||
        fail "apt-get install of the four packages in debian:12"
    "$TOOL" exec "$c" sh -ec 'getent passwd shardgate >/dev/null; test -f /etc/shardgate/shards.json
        test "$(stat -c %U:%a /var/lib/shardgate)" = shardgate:750; shardgate --version
        test "$(stat -c %U:%a /etc/shardgate/token /etc/shardgate/admin-token)" = \
            "$(printf "shardgate:600\nshardgate:600")"
        sum=$(cat /etc/shardgate/token /etc/shardgate/admin-token | md5sum)
        /var/lib/dpkg/info/shardgate.postinst configure 0.0.0
        test "$(cat /etc/shardgate/token /etc/shardgate/admin-token | md5sum)" = "$sum"' ||
        fail "postinst: user, /etc/shardgate, its tokens (0600, kept when run again) or /var/lib/shardgate missing"
    # The unit's own ExecStart, on a free port: it serves with the tokens postinst made.
    "$TOOL" exec -d "$c" sh -c "exec runuser -u shardgate -- \$(sed -n 's/^ExecStart=//p' \
        /usr/lib/systemd/system/shardgate.service | sed 's/127.0.0.1:8080/127.0.0.1:$port/')" >/dev/null
    wait_http "http://127.0.0.1:$port/readyz" 200 60
    status=$(post_example "$port" build/deb/unauthorized.json)
    [ "$status" = 401 ] || fail "POST without the token to the packaged unit's gateway: HTTP $status"
    expect_golden "$port" "$("$TOOL" exec "$c" cat /etc/shardgate/token)"
    "$TOOL" exec "$c" runuser -u shardgate -- /usr/bin/shardgate-health check \
        --conf /etc/shardgate/dispatch.env --shards /etc/shardgate/shards.json \
        --journal /var/lib/shardgate/journal.jsonl >/dev/null ||
        fail "shardgate-health check of the installed package's journal"
    "$TOOL" exec "$c" sh -ec "shardgate-post-batch --url http://127.0.0.1:$port/v1/batches \
            --batch /usr/share/shardgate/examples/changes.json --token-file /etc/shardgate/token \
            >/tmp/receipt.json
        cmp /tmp/receipt.json /src/tests/golden/sample-0001.receipt.v2.json
        shardgate-probe --conf /etc/shardgate/dispatch.env --shards /etc/shardgate/shards.json \
            --receipt /tmp/receipt.json --batch /usr/share/shardgate/examples/changes.json |
            grep -qx 'RESULT: OK'" || fail "python3-shardgate's commands against the installed daemon"
    "$TOOL" exec "$c" sh -ec 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
            --no-install-recommends gcc libc6-dev pkg-config binutils >/dev/null' ||
        fail "apt-get install of a C compiler in the container"
    "$TOOL" exec -e SHARDGATE_INSTALLED=1 "$c" python3 /src/tests/library/test_libshardgate.py \
        /usr/bin/shardgate /src >"build/deb/library-in-container.log" 2>&1 ||
        fail "libshardgate from the packages: $(tail -20 build/deb/library-in-container.log)"
    echo "ok: the packages install in debian:12; the daemon serves the worked example, health" \
        "passes, shardgate-probe verifies it, libshardgate passes its tests from libshardgate-dev"
}

case ${1:-all} in
build) cmd_build ;;
test) cmd_build && cmd_test ;;
cluster) cmd_build && cmd_cluster ;;
deb) cmd_deb ;;
secrets) cmd_secrets ;;
all) cmd_build && cmd_test && cmd_cluster && cmd_deb ;;
*)
    echo "usage: ops/image.sh [build|test|cluster|deb|secrets|all]" >&2
    exit 64
    ;;
esac
echo "RESULT: OK"
