#!/usr/bin/env bash
# The tree's habits, checked in the quick tier (docs/tools.md §4.2): every C file formatted as
# .clang-format says (`clang-format --dry-run --Werror`), and every shell script free of
# ShellCheck's warnings and errors (`shellcheck -x -S warning`; a directive in place, with its
# reason, is the only way to silence one). Prints the offenders, then RESULT: OK or RESULT: BAD.
#   check_habits.sh SOURCE_DIR     the tree's tracked files
#   check_habits.sh --self-test    a misformatted C file and a script with a warning are caught
set -uo pipefail

# c_files DIR / shell_files DIR: the tracked files of each kind, one per line (a tree that is
# not a git checkout: every file under DIR but build/).
list_files() {
    if git -C "$1" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git -C "$1" ls-files
    else
        (cd "$1" && find . -path ./build -prune -o -type f -print | sed 's|^\./||')
    fi
}

c_files() { list_files "$1" | grep -E '\.[ch]$'; }

# Scripts: *.sh, and any other file whose first line runs sh or bash (one awk over them all).
shell_files() {
    list_files "$1" | grep -E '\.sh$'
    list_files "$1" | grep -vE '\.sh$' | (cd "$1" && tr '\n' '\0' | xargs -0 -r awk \
        'FNR == 1 { if ($0 ~ /^#!.*(\/|env )(ba)?sh$/) print FILENAME; nextfile }' 2>/dev/null)
}

check() {
    local dir=$1 bad=0 f out
    # One clang-format over every file (deleted ones, not yet committed, left out); each
    # offender once, by name.
    mapfile -t cfiles < <(cd "$dir" && c_files . | while IFS= read -r f; do
        [ -f "$f" ] && echo "$f"; done)
    if [ "${#cfiles[@]}" -gt 0 ]; then
        while IFS= read -r f; do
            echo "not formatted: $f (clang-format -i $f)"
            bad=1
        done < <(cd "$dir" && clang-format --dry-run --Werror "${cfiles[@]}" 2>&1 |
            sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' |
            sort -u)
    fi
    mapfile -t scripts < <(shell_files "$dir")
    if [ "${#scripts[@]}" -gt 0 ]; then
        if ! out=$(cd "$dir" && shellcheck -x -S warning "${scripts[@]}" 2>&1); then
            printf 'shellcheck:\n%s\n' "$out"
            bad=1
        fi
    fi
    return "$bad"
}

self_test() {
    local t
    t=$(mktemp -d)
    trap 'rm -rf "$t"' RETURN
    cp "$(dirname "$0")/../../.clang-format" "$t/"
    printf 'int main(void){return 0;}\n' >"$t/bad.c"
    printf '#!/usr/bin/env bash\nunused=1\n' >"$t/warn"
    local out
    out=$(check "$t") && { echo "the planted faults passed"; return 1; }
    grep -q "^not formatted: bad.c " <<<"$out" || { echo "bad.c not caught: $out"; return 1; }
    grep -q "SC2034" <<<"$out" || { echo "the script's warning not caught: $out"; return 1; }
    printf 'int main(void)\n{\n    return 0;\n}\n' >"$t/bad.c"
    printf '#!/usr/bin/env bash\necho ok\n' >"$t/warn"
    check "$t" || { echo "a clean tree failed"; return 1; }
}

if [ "${1:-}" = --self-test ]; then
    if self_test; then echo "RESULT: OK"; else echo "RESULT: BAD"; exit 1; fi
elif check "${1:?usage: check_habits.sh SOURCE_DIR | --self-test}"; then
    echo "RESULT: OK"
else
    echo "RESULT: BAD"
    exit 1
fi
