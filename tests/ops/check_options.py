#!/usr/bin/env python3
"""Every option is honoured (docs/tools.md §11): each option `shardgate serve --help` and
`shardgate-health --help` print has a row in the table of docs/tools.md §11, and each row's
gate defect is one the mutation gate holds (ops/negative.py), with the row's test as its
catcher. usage: check_options.py SHARDGATE HEALTH SOURCE_DIR"""
import os
import re
import subprocess
import sys


def help_options(argv):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", p.stdout + p.stderr))


def table(root):
    text = open(os.path.join(root, "docs", "tools.md")).read()
    section = text[text.index("## 11. Every option is honoured"):]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[1].startswith("`--"):
            rows[(cells[0].strip("`"), cells[1].strip("`"))] = (cells[3], cells[4].strip("`"))
    return rows


def main(argv):
    shardgate, health, root = argv[1], argv[2], argv[3]
    sys.path.insert(0, os.path.join(root, "ops"))
    import negative
    defects = {d[0]: d[5] for d in negative.DEFECTS}
    rows = table(root)
    faults = []
    for binary, argv_help in (("shardgate serve", [shardgate, "serve", "--help"]),
                              ("shardgate-health", [health, "--help"])):
        for option in sorted(help_options(argv_help)):
            if (binary, option) not in rows:
                faults.append("%s %s: printed by --help, no row in docs/tools.md §11"
                              % (binary, option))
    for (binary, option), (catcher, defect) in sorted(rows.items()):
        if defect == "—":
            continue
        if defect not in defects:
            faults.append("%s %s: the gate holds no defect %s" % (binary, option, defect))
            continue
        test = catcher.split(":")[0].strip("` ")
        if not re.search(defects[defect], test):
            faults.append("%s %s: the defect %s is caught by %s, not by the row's %s"
                          % (binary, option, defect, defects[defect], test))
    for f in faults:
        print(f)
    print("options: %d rows, %d fault(s). RESULT: %s" % (len(rows), len(faults),
                                                          "BAD" if faults else "OK"))
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
