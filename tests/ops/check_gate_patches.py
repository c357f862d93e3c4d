#!/usr/bin/env python3
"""Every defect of the mutation gate (ops/negative.py) still applies: its patch text occurs
exactly once in its file. The gate itself runs only in the full tier and would report such a
defect as a FAIL after half an hour; this check says it in a second, in the quick tier, naming
the defect and the count. usage: check_gate_patches.py SOURCE_DIR"""
import os
import sys


def main(argv):
    root = argv[1]
    sys.path.insert(0, os.path.join(root, "ops"))
    import negative
    bad = 0
    for name, rel, old, new, _, _ in negative.DEFECTS:
        count = open(os.path.join(root, rel)).read().count(old)
        if count != 1 or old == new:
            bad += 1
            print("%s: its patch text occurs %d times in %s (must be once, and change it)"
                  % (name, count, rel))
    print("gate patches: %d defects, %d that do not apply. RESULT: %s"
          % (len(negative.DEFECTS), bad, "BAD" if bad else "OK"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
