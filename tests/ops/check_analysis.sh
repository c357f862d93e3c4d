#!/usr/bin/env bash
# The static analyser, checked in the quick tier (docs/tools.md §4.2): cppcheck over every C
# file the build compiles (its compile_commands.json: the gateway, health, the ring, the library,
# the tests and the benchmarks), with the checks of docs/decisions.md §53, must find nothing. A
# finding is silenced only in place, `// cppcheck-suppress ID ; why`, and a suppression without
# its reason is itself a finding. Prints the findings, then RESULT: OK or RESULT: BAD.
#   check_analysis.sh SOURCE_DIR COMPILE_COMMANDS   the build's files
#   check_analysis.sh --self-test                   a leak and a bare suppression are caught
set -uo pipefail

CHECKS=warning,performance,portability

# analyse COMPILE_COMMANDS: cppcheck's findings, one line each; fails when there is one.
analyse() {
    cppcheck --project="$1" --enable="$CHECKS" --inline-suppr --quiet -j 2 \
        --error-exitcode=1 --template='{file}:{line}:{column}: {severity}: {message} [{id}]' \
        2>&1
}

# bare_suppressions DIR: each tracked C file's line that suppresses a finding without a reason.
bare_suppressions() {
    (cd "$1" && { git ls-files 2>/dev/null || find . -type f; } | grep -E '\.[ch]$' |
        tr '\n' '\0' | xargs -0 -r grep -nE 'cppcheck-suppress' /dev/null |
        grep -vE 'cppcheck-suppress[[:space:]]+[A-Za-z0-9_]+[[:space:]]*;[[:space:]]*[^[:space:]]')
}

check() {
    local dir=$1 commands=$2 bad=0 out
    if [ ! -f "$commands" ]; then
        echo "$commands: no such file (configure with CMAKE_EXPORT_COMPILE_COMMANDS)"
        return 1
    fi
    if ! out=$(analyse "$commands"); then
        printf 'cppcheck:\n%s\n' "$out"
        bad=1
    fi
    if out=$(bare_suppressions "$dir"); then
        printf 'a suppression without its reason (// cppcheck-suppress ID ; why):\n%s\n' "$out"
        bad=1
    fi
    return "$bad"
}

# self_test: a file leaking on one path, then the same silenced with a reason, then without.
self_test() {
    local t out
    t=$(mktemp -d)
    trap 'rm -rf "$t"' RETURN
    printf '[{"directory": "%s", "command": "cc -c leak.c", "file": "%s/leak.c"}]\n' "$t" "$t" \
        >"$t/compile_commands.json"
    write_leak() {
        printf '#include <stdlib.h>\nint f(int n)\n{\n    char *p = malloc(8);\n' >"$t/leak.c"
        printf '    if (n)\n        return 1;%s\n    free(p);\n    return 0;\n}\n' "$1" >>"$t/leak.c"
    }
    write_leak ""
    out=$(check "$t" "$t/compile_commands.json") && { echo "the leak passed"; return 1; }
    grep -q "leak.c:6:.*\[memleak\]" <<<"$out" || { echo "the leak not named: $out"; return 1; }
    write_leak " // cppcheck-suppress memleak ; the self-test's own"
    check "$t" "$t/compile_commands.json" || { echo "a suppression with its reason failed"; return 1; }
    write_leak " // cppcheck-suppress memleak"
    out=$(check "$t" "$t/compile_commands.json") && { echo "a bare suppression passed"; return 1; }
    grep -q "leak.c:6:" <<<"$out" || { echo "the bare suppression not named: $out"; return 1; }
}

if [ "${1:-}" = --self-test ]; then
    if self_test; then echo "RESULT: OK"; else echo "RESULT: BAD"; exit 1; fi
elif check "${1:?usage: check_analysis.sh SOURCE_DIR COMPILE_COMMANDS | --self-test}" \
    "${2:?usage: check_analysis.sh SOURCE_DIR COMPILE_COMMANDS | --self-test}"; then
    echo "RESULT: OK"
else
    echo "RESULT: BAD"
    exit 1
fi
