#!/usr/bin/env python3
"""ops/gate_anchor.py finds a defect's text in the definition it names, wherever in its folder
that definition lives, and names why it cannot: no definition, a text found twice or not at all.
Declarations, calls and comments naming the function are not its definition.

usage: test_gate_anchor.py SOURCE_DIR
"""
import os
import sys
import tempfile

C_FILE = """#include "x.h"

static int walk(int n);
/* walk(n) is the walk */
static int walk(int n)
{
    int at = n + 1;
    return at;
}

int gw_x_take(const struct gw_x *x,
              int n)
{
    return walk(n) + 1;
}

struct gw_x {
    int n + 1;
};
"""
OTHER_C = """static int walk(int n)
{
    return n - 1;
}
"""
PY_FILE = """def outer(a):
    return a + 1


class Box:
    def put(self, a):
        return a + 1

    def get(self):
        return 2
"""


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def main(argv):
    sys.path.insert(0, os.path.join(argv[1], "ops"))
    import gate_anchor
    failures = []

    def expect(where, old, want):
        try:
            path, text, at = gate_anchor.locate(root, where, old)
            got = (os.path.relpath(path, root), text[at:at + len(old)] == old,
                   text[:at].count("\n") + 1)
        except LookupError as e:
            got = str(e)
        if got != want:
            failures.append("%s %r: %r != %r" % (where, old, got, want))

    with tempfile.TemporaryDirectory(prefix="shardgate-anchor-") as root:
        write(root, "gateway/core/x.c", C_FILE)
        write(root, "gateway/store/y.c", OTHER_C)
        write(root, "client/p.py", PY_FILE)
        expect("gateway:walk", "n + 1", ("gateway/core/x.c", True, 7))
        expect("gateway:walk", "n - 1", ("gateway/store/y.c", True, 3))
        expect("gateway:walk", "return", "its text occurs 2 times in gateway:walk (must be once)")
        expect("gateway:gw_x_take", "+ 1", ("gateway/core/x.c", True, 14))
        expect("gateway:gw_x", "n + 1", ("gateway/core/x.c", True, 18))
        expect("gateway:gw_x_take", "n + 1",
               "its text occurs 0 times in gateway:gw_x_take (must be once)")
        expect("gateway:run", "x", "no definition of run under gateway")
        expect("gateway", "n - 1", ("gateway/store/y.c", True, 3))
        expect("gateway", "n + 1", "its text occurs 2 times in gateway (must be once)")
        expect("client:outer", "a + 1", ("client/p.py", True, 2))
        expect("client:put", "a + 1", ("client/p.py", True, 7))
        expect("client:get", "a + 1", "its text occurs 0 times in client:get (must be once)")
        expect("ring:walk", "x", "no sources under ring")
        # the definition moved to another folder of the part: the defect follows it
        os.rename(os.path.join(root, "gateway/store/y.c"), write(root, "gateway/store/file/z.c",
                                                                 ""))
        expect("gateway:walk", "n - 1", ("gateway/store/file/z.c", True, 3))
        path, original = gate_anchor.apply(root, "gateway:walk", "n - 1", "n - 2")
        if open(path).read() != OTHER_C.replace("n - 1", "n - 2"):
            failures.append("apply did not patch the one occurrence")
        gate_anchor.restore(path, original)
        if open(path).read() != OTHER_C:
            failures.append("restore did not put the file back")
    for f in failures:
        print("FAIL " + f)
    print("gate anchors: %d failures. RESULT: %s" % (len(failures), "BAD" if failures else "OK"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
