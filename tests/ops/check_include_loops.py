#!/usr/bin/env python3
"""No include loop between modules (docs/architecture.md §1): a module is a file name's stem
(x.c with x.h), and a header of no .c of its own named after a module of its folder
(x_internal.h) is that module's private header; module A depends on B when a file of A
includes B's header. Every cycle of that graph in gateway/, ring/ and health/ is printed, then
RESULT: OK or RESULT: BAD.

usage: check_include_loops.py ROOT | --self-test
"""
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^#\s*include\s*"([^"/]+)"', re.M)


def graph(root, part):
    """module -> set of modules it includes, within one part of the tree (names unique)."""
    files = []
    for base, _, names in os.walk(os.path.join(root, part)):
        files += [os.path.join(base, n) for n in names if n.endswith((".c", ".h"))]
    by_name = {}
    for f in files:
        by_name.setdefault(os.path.basename(f), []).append(f)
    owner = private_headers(files)
    deps = {}
    for f in files:
        mod = owner.get(os.path.splitext(f)[0], os.path.splitext(f)[0])
        with open(f, encoding="utf-8") as src:
            for inc in INCLUDE.findall(src.read()):
                if len(by_name.get(inc, [])) == 1:
                    other = os.path.splitext(by_name[inc][0])[0]
                    other = owner.get(other, other)
                    if other != mod:
                        deps.setdefault(mod, set()).add(other)
    return deps


def private_headers(files):
    """stem -> the module owning it: x_y.h with no x_y.c belongs to x when x.c exists."""
    stems = {os.path.splitext(f)[0] for f in files}
    with_c = {os.path.splitext(f)[0] for f in files if f.endswith(".c")}
    owner = {}
    for stem in stems - with_c:
        base = os.path.basename(stem)
        mods = [m for m in with_c if os.path.dirname(m) == os.path.dirname(stem) and
                base.startswith(os.path.basename(m) + "_")]
        if mods:
            owner[stem] = max(mods, key=len)
    return owner


def cycles(deps):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(deps.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(deps):
        if v not in index:
            visit(v)
    return out


def check(root):
    found = []
    for part in ("gateway", "ring", "health"):
        if os.path.isdir(os.path.join(root, part)):
            for comp in cycles(graph(root, part)):
                found.append(" <-> ".join(os.path.relpath(m, root) for m in comp))
    for line in found:
        print("include loop: " + line)
    return not found


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "gateway", "core"))

        def put(name, text):
            with open(os.path.join(tmp, "gateway", "core", name), "w", encoding="utf-8") as f:
                f.write(text)
        put("a.h", "")
        put("b.h", '#include "a.h"\n')
        put("a.c", '#include "a.h"\n')
        clean = check(tmp)
        put("a_internal.h", '#include "a.h"\n')  # a's private header
        put("a.c", '#include "a_internal.h"\n')
        private = check(tmp)
        put("a.c", '#include "a.h"\n#include "b.h"\n')  # a -> b -> a
        caught = not check(tmp)
    ok = clean and private and caught
    print("self-test: a clean tree passes: %s; a private header passes: %s; a loop is caught: "
          "%s" % (clean, private, caught))
    return ok


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        ok = self_test()
    elif len(argv) == 2:
        ok = check(argv[1])
    else:
        print(__doc__, file=sys.stderr)
        return 64
    print("RESULT: OK" if ok else "RESULT: BAD")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
