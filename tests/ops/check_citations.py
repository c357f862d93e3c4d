#!/usr/bin/env python3
"""check_citations.py - every spec citation in the tree names a section that exists.

The project's docs are its spec (docs/contract.md, docs/journal.md, docs/api.md,
docs/operations.md, docs/limits.md, docs/tools.md, docs/decisions.md), each numbered once
with headings like `## 3. The ring` and `### 3.2 Lookup`. A rule is cited as
`docs/<file>.md §<n>` (or `§<n>.<m>`; a Markdown link `[x](x.md) §<n>` too); a list or
range after it (`§1, §2`, `§1-§5`) cites the same file. This check reads every tracked text file and fails, naming file:line, on:

- a citation of a docs file that does not exist, or of a section with no such heading;
- a bare `§<n>` outside docs/ that no `docs/<file>.md` names (it is ambiguous);
- a `§<n>` inside docs/<file>.md with no such heading in that file;
- a Markdown link to a .md file that does not exist;
- two headings with the same number in one docs file ("numbered once");
- any reference to the old out-of-tree design document (the word written in capitals,
  as in the file name it had): docs/ is the spec now;
- an issue number ("issue 12", "Issue #13"): the tree cites the docs section that holds the
  rule, never the request that asked for it.

Usage: check_citations.py ROOT      exit 0 when clean, 1 with one line per fault
       check_citations.py --self-test  proves on a temporary tree that faults are caught
"""

import os
import re
import subprocess
import sys
import tempfile

SELF = "tests/ops/check_citations.py"
# Built from two halves so that this file's own source does not hold the word it forbids.
OUT_OF_TREE_DOC = re.compile(r"\b" + "DESI" + r"GN\b")
ISSUE_NUMBER = re.compile(r"\b" + "iss" + r"ues?\s+#?\d+", re.I)
SECTION = r"§(\d+(?:\.\d+)*)"
# `docs/x.md §3`, `docs/x.md, §3`, then `, §4`, ` and §5`, `-§6`, `–§6` for the same file.
CITATION = re.compile(r"(?<![\w/.-])(docs/)?([A-Za-z0-9_-]+)\.md\)?,?\s*" + SECTION +
                      r"((?:\s*(?:,|and|or|-|–|—|to)\s*" + SECTION + r")*)")
CONTINUED = re.compile(SECTION)
BARE = re.compile(SECTION)
DOCS_FILE = re.compile(r"(?<![\w/.-])docs/([A-Za-z0-9_-]+)\.md\b")
MD_LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")
# A citation wrapped by a formatter: the file ends one line, its `§<n>` list opens the next.
WRAPPED_FILE = re.compile(r"(?<![\w/.-])(?:docs/)?([A-Za-z0-9_-]+)\.md\)?,?\s*$")
WRAPPED_SECTIONS = re.compile(r"^\s*(?:\*|#+|//|--)?\s*(" + SECTION +
                              r"(?:\s*(?:,|and|or|-|–|—|to)\s*" + SECTION + r")*)")
HEADING = re.compile(r"^#{2,6}\s+(\d+(?:\.\d+)*)\.?\s")


def tracked_files(root):
    """Paths relative to root: git's tracked and untracked-but-not-ignored files, or a walk."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, check=True).stdout
        names = [n.decode() for n in out.split(b"\0") if n]
        return sorted(n for n in set(names) if os.path.isfile(os.path.join(root, n)))
    except (OSError, subprocess.CalledProcessError):
        found = []
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if x != ".git" and not x.startswith("build")]
            found += [os.path.relpath(os.path.join(d, f), root) for f in files]
        return sorted(found)


def read_text(path):
    """The file's lines, or None for a binary or non-UTF-8 file."""
    with open(path, "rb") as f:
        data = f.read()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        return None


def doc_sections(lines, rel, faults):
    """Section numbers of a docs file's headings (outside code fences); notes duplicates."""
    seen, fenced = {}, False
    for n, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        m = None if fenced else HEADING.match(line)
        if m and m.group(1) in seen:
            faults.append("%s:%d: section %s is numbered twice (first on line %d)"
                          % (rel, n, m.group(1), seen[m.group(1)]))
        elif m:
            seen[m.group(1)] = n
    return set(seen)


class Tree:
    def __init__(self, root):
        self.root, self.faults, self.docs = root, [], {}
        self.files = [f for f in tracked_files(root) if f.replace(os.sep, "/") != SELF]

    def sections(self, doc):
        """The section numbers of docs/<doc>.md, or None when the file does not exist."""
        if doc not in self.docs:
            path = os.path.join(self.root, "docs", doc + ".md")
            lines = read_text(path) if os.path.isfile(path) else None
            self.docs[doc] = None if lines is None else doc_sections(lines, "docs/%s.md" % doc, [])
        return self.docs[doc]

    def fault(self, rel, n, what):
        line = "%s:%d: %s" % (rel, n, what)
        if line not in self.faults:
            self.faults.append(line)

    def cite(self, rel, n, doc, numbers):
        have = self.sections(doc)
        if have is None:
            self.fault(rel, n, "docs/%s.md does not exist" % doc)
            return
        for num in numbers:
            if num not in have:
                self.fault(rel, n, "cites docs/%s.md §%s, which has no such section" % (doc, num))


def check_line(tree, rel, n, line, previous):
    own = rel[len("docs/"):-len(".md")] if rel.startswith("docs/") and rel.endswith(".md") else None
    if OUT_OF_TREE_DOC.search(line):
        tree.fault(rel, n, "refers to the old design document; cite docs/<file>.md §<n>")
    if ISSUE_NUMBER.search(line):
        tree.fault(rel, n, "cites an issue number; cite docs/<file>.md §<n>")
    covered = []
    wrapped, head = WRAPPED_FILE.search(previous), WRAPPED_SECTIONS.match(line)
    if wrapped and head:
        tree.cite(rel, n, wrapped.group(1), CONTINUED.findall(head.group(1)))
        covered.append((head.start(1), head.end(1)))
    for m in CITATION.finditer(line):
        numbers = [m.group(3)] + CONTINUED.findall(m.group(4) or "")
        tree.cite(rel, n, m.group(2), numbers)
        covered.append((m.start(), m.end()))
    for m in DOCS_FILE.finditer(line):
        if tree.sections(m.group(1)) is None:
            tree.fault(rel, n, "docs/%s.md does not exist" % m.group(1))
    for m in MD_LINK.finditer(line):
        target = os.path.normpath(os.path.join(os.path.dirname(rel), m.group(1)))
        if "://" not in m.group(1) and not os.path.isfile(os.path.join(tree.root, target)):
            tree.fault(rel, n, "%s does not exist" % target.replace(os.sep, "/"))
    for m in BARE.finditer(line):
        if any(a <= m.start() < b for a, b in covered):
            continue
        if own is None:
            tree.fault(rel, n, "bare §%s: say which docs/<file>.md it is in" % m.group(1))
        else:
            tree.cite(rel, n, own, [m.group(1)])


def check(root):
    tree = Tree(root)
    for rel in tree.files:
        lines = read_text(os.path.join(root, rel))
        if lines is None:
            continue
        if rel.startswith("docs/") and rel.endswith(".md"):
            doc_sections(lines, rel, tree.faults)
        for n, line in enumerate(lines, 1):
            check_line(tree, rel, n, line, lines[n - 2] if n > 1 else "")
    return tree.faults


SELF_TEST_FILES = {
    "docs/a.md": "# A\n\n## 1. One\n\n### 1.2 Two\n\nSee §1 and [b](b.md).\n```\n## 9. in a fence\n```\n",
    "docs/b.md": ("# B\n\n## 1. One\n\nAs docs/a.md §1.2 says; and §7 here.\n\n## 1. Again\n"
                  "As [a](a.md) §4 says.\n"),
    "good.c": ("/* docs/a.md §1, §1.2 and docs/b.md §1; docs/a.md §1-§1.2; wrapped docs/a.md\n"
               " * §1.2 */\n"),
    "bad.c": ("/* docs/a.md §3 */\n/* docs/nope.md §1 */\n/* see §2 */\n/* DESI" "GN.md §4 */\n"
              "/* docs/a.md §9 (fenced, not a heading) */\n/* [x](docs/missing.md) */\n"
              "/* wrapped docs/a.md\n * §5 */\n/* as Iss" "ue #12 asks */\n# iss" "ue 3: why\n"),
}
SELF_TEST_WANT = [
    "bad.c:1: cites docs/a.md §3, which has no such section",
    "bad.c:2: docs/nope.md does not exist",
    "bad.c:3: bare §2: say which docs/<file>.md it is in",
    "bad.c:4: refers to the old design document; cite docs/<file>.md §<n>",
    "bad.c:4: docs/" "DESI" "GN.md does not exist",
    "bad.c:5: cites docs/a.md §9, which has no such section",
    "bad.c:6: docs/missing.md does not exist",
    "bad.c:8: cites docs/a.md §5, which has no such section",
    "bad.c:9: cites an issue number; cite docs/<file>.md §<n>",
    "bad.c:10: cites an issue number; cite docs/<file>.md §<n>",
    "docs/b.md:5: cites docs/b.md §7, which has no such section",
    "docs/b.md:7: section 1 is numbered twice (first on line 3)",
    "docs/b.md:8: cites docs/a.md §4, which has no such section",
]


def self_test():
    """Runs this checker as a program on a temporary tree: the bad tree must give exactly the
    expected faults and exit 1, and the same tree without them must exit 0."""
    with tempfile.TemporaryDirectory() as d:
        for rel, text in SELF_TEST_FILES.items():
            os.makedirs(os.path.join(d, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w", encoding="utf-8") as f:
                f.write(text)
        bad = subprocess.run([sys.executable, os.path.abspath(__file__), d],
                             capture_output=True, text=True)
        got = sorted(bad.stdout.splitlines()[:-1])
        if bad.returncode != 1 or got != sorted(SELF_TEST_WANT):
            print("self-test: the bad tree gave exit %d and\n%s" % (bad.returncode, bad.stdout))
            return 1
        os.remove(os.path.join(d, "bad.c"))
        with open(os.path.join(d, "docs/b.md"), "w", encoding="utf-8") as f:
            f.write("# B\n\n## 1. One\n\nAs docs/a.md §1.2 says.\n")
        good = subprocess.run([sys.executable, os.path.abspath(__file__), d],
                              capture_output=True, text=True)
        if good.returncode != 0:
            print("self-test: the clean tree gave exit %d and\n%s" % (good.returncode, good.stdout))
            return 1
    print("self-test: %d faults caught exactly; clean tree passes. RESULT: OK" % len(SELF_TEST_WANT))
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 2 or argv[1].startswith("-"):
        print(__doc__.strip().split("\n\n")[-1], file=sys.stderr)
        return 64
    faults = check(argv[1])
    for f in faults:
        print(f)
    print("citations: %d fault(s). RESULT: %s" % (len(faults), "BAD" if faults else "OK"))
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
