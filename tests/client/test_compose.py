#!/usr/bin/env python3
"""docker-compose.yml and Dockerfile: valid, complete, and consistent with the build.

Run as `test_compose.py SOURCE_DIR [CASE...]`; the build-layout case reads the build
directory from SHARDGATE_BUILD_DIR (set by ctest).
"""

import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sgtest import Skip, case, eq, ok, run, src, main  # noqa: E402


def compose_config():
    exe = shutil.which("docker-compose")
    if exe is None:
        raise Skip("docker-compose is not installed")
    res = run([exe, "-f", src("docker-compose.yml"), "config", "-q"], cwd=src())
    eq((res.returncode, res.stderr), (0, ""), "docker-compose config -q")
    res = run([exe, "-f", src("docker-compose.yml"), "config"], cwd=src())
    eq(res.returncode, 0, "docker-compose config: %s" % res.stderr)
    return res.stdout


def blocks(text, indent):
    """Splits normalized YAML into {key: its block's lines} at one indentation level."""
    out, key = {}, None
    pattern = re.compile(r"^ {%d}([A-Za-z0-9_.-]+):" % indent)
    for line in text.splitlines():
        depth = len(line) - len(line.lstrip(" "))
        if line.strip() and depth <= indent:
            m = pattern.match(line) if depth == indent else None
            key = m.group(1) if m else None
            if key is not None:
                out[key] = []
        if key is not None:
            out[key].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


@case("compose_config")
def compose_config_is_complete():
    top = blocks(compose_config(), 0)
    ok("services" in top and "volumes" in top, "top-level keys: %s" % list(top))
    every = blocks(top["services"], 2)
    # The cluster profile's services (docs/operations.md §9) start only with --profile cluster.
    cluster = {k: v for k, v in every.items() if re.search(r"^    profiles:\n    - cluster$",
                                                           v, re.M)}
    eq(sorted(cluster), ["cluster-health", "db-migrate", "gateway-1", "gateway-2", "gateway-3",
                         "haproxy", "postgres"], "the cluster profile's services")
    services = {k: v for k, v in every.items() if k not in cluster}
    eq(sorted(services), ["gateway", "health"], "the default services")
    ok(re.search(r"^  state:", top["volumes"], re.M), "named volume state: %s" % top["volumes"])
    gw, hc = services["gateway"], services["health"]
    for name, svc in services.items():
        ok("    healthcheck:\n" in svc, "%s has a healthcheck" % name)
        ok(re.search(r"^    - state:/var/lib/shardgate(:r[ow])?$", svc, re.M),
           "%s mounts the state volume" % name)
    for arg in ("- shardgate\n", "- serve\n", "- --state-dir\n", "- 0.0.0.0:8080\n",
                "/etc/shardgate/dispatch.env", "/etc/shardgate/shards.json", "8080:8080"):
        ok(arg in gw, "gateway has %r" % arg)
    ok("/readyz" in gw and "/dev/tcp/" in gw and "python3" not in gw and "curl" not in gw,
       "gateway probes /readyz with bash alone")
    for arg in ("- shardgate-health\n", "shardgate-health check --conf", "- 0.0.0.0:8081\n",
                "8081:8081", "/var/lib/shardgate/journal.jsonl"):
        ok(arg in hc, "health has %r" % arg)
    ok(re.search(r"depends_on:\n\s+gateway:\n\s+condition: service_healthy", hc),
       "health depends on a healthy gateway")


def healthcheck_test(service):
    """A service's healthcheck test, read from the compose file."""
    with open(src("docker-compose.yml"), encoding="utf-8") as f:
        return yaml.safe_load(f)["services"][service]["healthcheck"]["test"]


@case("compose_config")
def healthchecks_are_one_shell_string():
    """podman-compose 1.0.3 joins a CMD list into a broken shell line: one CMD-SHELL string."""
    for service in ("gateway", "health", "postgres"):
        test = healthcheck_test(service)
        eq((len(test), test[0]), (2, "CMD-SHELL"), "%s healthcheck form" % service)


class Answer(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self):
        self.send_response(self.status if self.path == "/readyz" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@case("compose_config")
def gateway_healthcheck_is_green_only_on_200():
    command = healthcheck_test("gateway")[1]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    line = command.replace("/dev/tcp/127.0.0.1/8080", "/dev/tcp/127.0.0.1/%d" % port)
    ok(line != command, "the healthcheck names 127.0.0.1:8080")
    try:
        for status, want in ((200, 0), (503, 1), (500, 1), (204, 1)):
            Answer.status = status
            res = run(["sh", "-c", line], timeout=20)
            eq(res.returncode, want, "healthcheck exit when /readyz answers %d" % status)
    finally:
        server.shutdown()
        server.server_close()
    res = run(["sh", "-c", line], timeout=20)
    eq(res.returncode, 1, "healthcheck exit when nothing listens")


def needed_libraries(path):
    res = run(["readelf", "-d", path])
    eq(res.returncode, 0, "readelf %s" % path)
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", res.stdout)


# Debian 12 runtime package of every shared library the programs may need.
RUNTIME_PACKAGE = {"libcrypto.so.3": "libssl3", "libssl.so.3": "libssl3",
                   "libmicrohttpd.so.12": "libmicrohttpd12", "libjansson.so.4": "libjansson4",
                   "libsystemd.so.0": "libsystemd0", "libzstd.so.1": "libzstd1",
                   "libz.so.1": "zlib1g", "libisal.so.2": "libisal2",
                   "libpq.so.5": "libpq5", "librocksdb.so.7.8": "librocksdb7.8",
                   "libcurl.so.4": "libcurl4"}
# libc is in every image; sanitizer runtimes only appear in the ASan test build, never in
# the image's Release build.
BASE_OR_SANITIZER = re.compile(
    r"^(libc|libm|libpthread|libdl|librt|ld-linux[^.]*|libasan|libubsan|liblsan|libgcc_s)\.so")


def dockerfile_stages():
    """{stage name: its text} of the Dockerfile's `FROM debian:12 AS NAME` stages."""
    with open(src("Dockerfile"), encoding="utf-8") as f:
        dockerfile = f.read()
    parts = re.split(r"^FROM (\S+) AS (\S+)$", dockerfile, flags=re.M)
    stages = {}
    for base, name, text in zip(parts[1::3], parts[2::3], parts[3::3]):
        # One base for every stage: only debian:12 can be made locally (docs/operations.md §6.1).
        eq(base, "debian:12", "stage %s's base" % name)
        stages[name] = text
    return stages


# The final stage of each program, and what the other role stages must not hold.
PROGRAM_STAGE = {"gateway/shardgate": "gateway", "health/shardgate-health": "health"}


@case("dockerfile")
def dockerfile_matches_the_build():
    """One final stage per role, the gateway last; each program's stage installs it from the
    build stage and a package for every library it links, and nothing of another role's."""
    stages = dockerfile_stages()
    eq(list(stages), ["build", "health", "database", "proxy", "gateway"], "stages, in order")
    for pkg in ("build-essential", "cmake", "pkg-config", "libssl-dev", "libmicrohttpd-dev",
                "libjansson-dev", "libsystemd-dev"):
        ok(re.search(r"\s%s(\s|$)" % re.escape(pkg), stages["build"]), "build installs %s" % pkg)
    ok("build/gateway/shardgate build/health/shardgate-health /usr/local/bin/" in stages["build"],
       "the build stage installs both programs from the build tree")
    for rel, stage in PROGRAM_STAGE.items():
        program = os.path.basename(rel)
        ok("COPY --from=build /usr/local/bin/%s /usr/local/bin/\n" % program in stages[stage],
           "the %s stage copies %s alone" % (stage, program))
    for stage, text in stages.items():
        code = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))
        ok(not re.search(r"\spython3(\s|$)", code), "the %s stage installs no python3" % stage)
    ok("postgresql-15" in stages["database"] and "haproxy" in stages["proxy"],
       "the database and proxy stages install their servers")
    for stage in ("gateway", "health"):
        ok("postgresql-15" not in stages[stage] and "haproxy" not in stages[stage],
           "the %s stage holds no PostgreSQL or HAProxy" % stage)
    build = os.environ.get("SHARDGATE_BUILD_DIR")
    if not build:
        raise Skip("SHARDGATE_BUILD_DIR not set (run through ctest)")
    for rel, stage in PROGRAM_STAGE.items():
        path = os.path.join(build, rel)
        ok(os.access(path, os.X_OK), "%s is where the Dockerfile expects it" % path)
        for lib in needed_libraries(path):
            if BASE_OR_SANITIZER.match(lib):
                continue
            ok(lib in RUNTIME_PACKAGE, "%s needs %s: add its package to the %s stage "
               "and to RUNTIME_PACKAGE" % (rel, lib, stage))
            ok(re.search(r"\s%s(\s|$)" % re.escape(RUNTIME_PACKAGE[lib]), stages[stage]),
               "the %s stage installs %s for %s" % (stage, RUNTIME_PACKAGE[lib], lib))


@case("dockerfile")
def dockerignore_keeps_build_trees_out():
    with open(src(".dockerignore"), encoding="utf-8") as f:
        lines = {l.strip() for l in f if l.strip() and not l.startswith("#")}
    for entry in (".git", "build", "build-*", "state"):
        ok(entry in lines, ".dockerignore has %s" % entry)


if __name__ == "__main__":
    sys.exit(main(sys.argv, ("source",)))
