#!/usr/bin/env python3
"""Mutation check for health/ (manual, not a ctest): copies health/, tests/health/ and the
example data to a temporary tree (the working tree is never touched), applies one defect at a
time, checks the patch changed the file, rebuilds, and requires the named test to fail.

usage: tests/health/mutate.py   (prints CAUGHT/MISSED per defect; exit 1 if any missed)
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (name, file, old, new, test); old "ALL:x" replaces every occurrence
DEFECTS = [
    ("tie order reversed", "health/ring.c", "return a->shard < b->shard ? -1 : 1;",
     "return a->shard > b->shard ? -1 : 1;", "health_edges"),
    ("> instead of >= at the gallop start", "health/ring.c", "if (at < n && p[at].value < h) {",
     "if (at < n && p[at].value <= h) {", "health_edges"),
    ("> instead of >= everywhere", "health/ring.c", "ALL:value < h", "value <= h", "health_edges"),
    ("wrap to the last point", "health/ring.c", ": &p[0];", ": &p[n - 1];", "health_receipt"),
    ("non-online shards in the ring", "health/ring.c",
     "        if (s->state != HC_STATE_ONLINE)\n            continue;\n        uint32_t want",
     "        if (s->state == HC_STATE_OFFLINE)\n            continue;\n        uint32_t want",
     "health_receipt"),
    ("vnodes divided by shard count", "health/ring.c", "uint32_t want = c->vnodes * s->weight;",
     "uint32_t want = c->vnodes / (uint32_t)m->n * s->weight;", "health_receipt"),
    ("key hash byte order swapped", "health/ring.c", "    *hash = hc_le32(d);",
     "    *hash = (uint32_t)d[3] | (uint32_t)d[2] << 8 | (uint32_t)d[1] << 16 | "
     "(uint32_t)d[0] << 24;", "health_receipt"),
    ("md5 hard-coded", "health/ring.c", 'return h == HC_HASH_MD5 ? "MD5" : "SHA1";',
     '(void)h;\n    return "MD5";', "health_receipt"),
    ("load counted per change", "health/verify.c", ": d->load[s] + size;", ": d->load[s] + 1;",
     "health_receipt"),
    ("criteria table emptied", "health/verify.c",
     "v->n_criteria = n_criteria < hc_criteria_count ? n_criteria : hc_criteria_count;",
     "v->n_criteria = 0 * n_criteria;", "health_receipt"),
    ("exit code forced to 0", "health/main.c",
     "code = hc_report_pass(&report, &end) ? EXIT_PASS : EXIT_FAIL;", "code = EXIT_PASS;",
     "health_receipt"),
    ("contract default VNODES", "health/contract.c",
     "    for (int k = 0; k < K_COUNT; k++) {\n        if (!seen[k]) {",
     "    if (!seen[K_VNODES]) {\n        seen[K_VNODES] = 1;\n        c->vnodes = 160;\n    }\n"
     "    for (int k = 0; k < K_COUNT; k++) {\n        if (!seen[k]) {", "health_errors"),
    ("seq not checked", "health/criteria.c", "if (rec->seq <= rec->prev_seq)", "if (0)",
     "health_journal"),
    ("no re-read after truncation", "health/journal.c", "hc_journal_forget(j);\n        j->resets++;",
     "j->resets++;", "health_serve"),
    # the epoch chain (the cases of test_chain.py need the gateway, so they are not in this tree)
    ("epoch id without capacities", "health/epoch_id.c",
     '"%s %s %" PRId64 " %u\\n", s->id, hc_state_name(s->state),\n                       s->capacity,',
     '"%s %s %" PRId64 " %u\\n", s->id, hc_state_name(s->state),\n                       (int64_t)0,',
     "health_receipt"),
    ("receipt judged against the latest epoch", "health/journal.c",
     "            r->named = e;\n            return e;", "            r->named = e;\n            return in_force;",
     "health_journal"),
]

WRAPPER = """cmake_minimum_required(VERSION 3.18)
project(hcmut LANGUAGES C)
set(CMAKE_C_STANDARD 11)
set(CMAKE_C_EXTENSIONS OFF)
add_compile_definitions(_POSIX_C_SOURCE=200809L)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
find_package(PkgConfig REQUIRED)
pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
pkg_check_modules(MHD REQUIRED IMPORTED_TARGET libmicrohttpd)
function(shardgate_target_warnings target)
endfunction()
add_subdirectory(health)
enable_testing()
add_subdirectory(tests/health)
"""


def main():
    tmp = tempfile.mkdtemp(prefix="hc-mutate-")
    for d in ("health", "tests/health", "conf", "input", "tests/golden"):
        shutil.copytree(os.path.join(ROOT, d), os.path.join(tmp, d),
                        ignore=shutil.ignore_patterns("__pycache__"))
    with open(os.path.join(tmp, "CMakeLists.txt"), "w") as f:
        f.write(WRAPPER)
    build = os.path.join(tmp, "build")
    subprocess.run(["cmake", "-S", tmp, "-B", build], check=True, capture_output=True)
    missed = 0
    for name, rel, old, new, test in DEFECTS:
        path = os.path.join(tmp, rel)
        src = open(path).read()
        every = old.startswith("ALL:")
        old = old[4:] if every else old
        mutated = src.replace(old, new) if every else src.replace(old, new, 1)
        if mutated == src:
            print("PATCH DID NOT APPLY  %s" % name)
            missed += 1
            continue
        open(path, "w").write(mutated)
        try:
            b = subprocess.run(["cmake", "--build", build, "-j2"], capture_output=True)
            if b.returncode != 0:
                print("BUILD FAILED         %s" % name)
                missed += 1
                continue
            t = subprocess.run(["ctest", "--test-dir", build, "-R", "^%s$" % test],
                               capture_output=True)
            caught = t.returncode != 0
            print("%-20s %s (%s)" % ("CAUGHT" if caught else "MISSED", name, test))
            missed += not caught
        finally:
            open(path, "w").write(src)
    shutil.rmtree(tmp, ignore_errors=True)
    print("MISSED=%d" % missed)
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
