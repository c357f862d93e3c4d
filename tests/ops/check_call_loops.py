#!/usr/bin/env python3
"""No call loop between files (docs/architecture.md §1): file A calls B when A's object file
needs a function (nm: U) that B's object defines (nm: T); a loop is a set of files each of which
reaches every other by such calls. The include checks (check_layers.sh, check_include_loops.py)
read #include lines and cannot see a call back through a header of the same module; this reads
the objects the build compiled, as its compile_commands.json lists them, in gateway/, ring/,
health/ and lib/. Every loop is printed with the calls that close it, then RESULT: OK or
RESULT: BAD. A loop listed in KNOWN is one being untied: it is allowed, and listed until it is
gone (a KNOWN loop that no longer exists is an error, so the list only shrinks).

usage: check_call_loops.py SOURCE_DIR BUILD_DIR | --self-test
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile

from check_include_loops import cycles

PARTS = ("gateway/", "ring/", "health/", "lib/")

# The loops being untied (none now): a frozenset of the files of each.
KNOWN = []


def objects(root, build):
    """source file (relative to root) -> its object files, from the build's compile commands."""
    with open(os.path.join(build, "compile_commands.json"), encoding="utf-8") as f:
        commands = json.load(f)
    out = {}
    for c in commands:
        src = os.path.relpath(os.path.realpath(c["file"]), os.path.realpath(root))
        if not src.startswith(PARTS):
            continue
        args = c.get("arguments") or shlex.split(c["command"])
        obj = args[args.index("-o") + 1]
        out.setdefault(src, []).append(os.path.join(c["directory"], obj))
    return out


def symbols(objs):
    """(defined functions: name -> source, needed names: source -> set) over every object."""
    owner = {o: src for src, os_ in objs.items() for o in os_}
    listing = subprocess.run(
        ["nm", "-A", "--no-sort"] + sorted(owner), capture_output=True, text=True, check=True
    ).stdout
    defined, needed = {}, {}
    for line in listing.splitlines():
        obj, _, rest = line.partition(": ")
        if obj not in owner:
            obj, _, rest = line.rpartition(":")
        fields = rest.split()
        src = owner.get(obj)
        if src is None or not fields:
            continue
        if fields[0] == "U":
            needed.setdefault(src, set()).add(fields[1])
        elif len(fields) == 3 and fields[1] == "T":
            defined[fields[2]] = src
    return defined, needed


def call_graph(defined, needed):
    """source -> {callee source: sorted names called}."""
    graph = {}
    for src, names in needed.items():
        for name in names:
            callee = defined.get(name)
            if callee is not None and callee != src:
                graph.setdefault(src, {}).setdefault(callee, []).append(name)
    return graph


def loops(graph):
    """The sets of more than one file that call round into each other (the strongly connected
    components, by the include-loop check's Tarjan)."""
    return [frozenset(comp) for comp in cycles(graph)]


def check(root, build, known):
    objs = objects(root, build)
    if not objs:
        print(f"{build}/compile_commands.json: no file of {', '.join(PARTS)}")
        return 1
    graph = call_graph(*symbols(objs))
    bad = 0
    found = loops(graph)
    for comp in found:
        if comp in known:
            continue
        bad += 1
        print(f"call loop of {len(comp)} files:")
        for a in sorted(comp):
            for b, names in sorted(graph.get(a, {}).items()):
                if b in comp:
                    print(f"  {a} -> {b}: {', '.join(sorted(names))}")
    for comp in known:
        if comp not in found:
            bad += 1
            print(f"a known loop is gone (remove it from KNOWN): {', '.join(sorted(comp))}")
    return bad


def self_test():
    with tempfile.TemporaryDirectory() as t:
        os.makedirs(os.path.join(t, "ring"))
        sources = {
            "a.c": "int b(void);\nint a(void) { return b(); }\n",
            "b.c": "int c(void);\nint b(void) { return c(); }\n",
            "c.c": "int a(void);\nint c(void) { return a(); }\n",
            "d.c": "int a(void);\nint d(void) { return a(); }\n",
        }
        commands = []
        for name, text in sources.items():
            with open(os.path.join(t, "ring", name), "w", encoding="utf-8") as f:
                f.write(text)
            commands.append(
                {"directory": t, "command": f"cc -c -o {name}.o ring/{name}",
                 "file": os.path.join(t, "ring", name)}
            )
            subprocess.run(["cc", "-c", "-o", f"{name}.o", f"ring/{name}"], cwd=t, check=True)
        with open(os.path.join(t, "compile_commands.json"), "w", encoding="utf-8") as f:
            json.dump(commands, f)
        abc = frozenset({"ring/a.c", "ring/b.c", "ring/c.c"})
        if check(t, t, []) != 1:
            print("self-test: the loop a -> b -> c -> a was not found once")
            return False
        if check(t, t, [abc]) != 0:
            print("self-test: a known loop was not allowed")
            return False
        with open(os.path.join(t, "ring", "c.c"), "w", encoding="utf-8") as f:
            f.write("int c(void) { return 0; }\n")
        subprocess.run(["cc", "-c", "-o", "c.c.o", "ring/c.c"], cwd=t, check=True)
        if check(t, t, []) != 0:
            print("self-test: a tree without a loop failed")
            return False
        if check(t, t, [abc]) != 1:
            print("self-test: a known loop that is gone was not named")
            return False
    return True


def main(argv):
    if argv[1:] == ["--self-test"]:
        ok = self_test()
    elif len(argv) == 3:
        ok = check(argv[1], argv[2], KNOWN) == 0
    else:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 64
    print("RESULT: OK" if ok else "RESULT: BAD")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
