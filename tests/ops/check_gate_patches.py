#!/usr/bin/env python3
"""Every defect of the mutation gate (ops/negative.py) still applies: its patch text occurs
exactly once where it names (a definition, or a folder: ops/gate_anchor.py). The gate itself
runs only in the full tier and would report such a defect as a FAIL after half an hour; this
check says it in a second, in the quick tier, naming the defect and why.
usage: check_gate_patches.py SOURCE_DIR"""
import os
import sys


def main(argv):
    root = argv[1]
    sys.path.insert(0, os.path.join(root, "ops"))
    import negative
    bad = 0
    import gate_anchor
    for name, where, old, new, _, _ in negative.DEFECTS:
        try:
            gate_anchor.locate(root, where, old)
            if old == new:
                raise LookupError("its patch changes nothing")
        except LookupError as e:
            bad += 1
            print("%s: %s" % (name, e))
    print("gate patches: %d defects, %d that do not apply. RESULT: %s"
          % (len(negative.DEFECTS), bad, "BAD" if bad else "OK"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
