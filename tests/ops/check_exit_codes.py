#!/usr/bin/env python3
"""`shardgate`'s exit codes, one list in four places: the code's (gateway/core/exit.h, enum
gw_exit), docs/tools.md §1's table, the man page's EXIT STATUS and the README's "Exit codes:"
line. A code added to the program and not to each of them, or documented and not in the code,
is named here. Prints RESULT: OK or RESULT: BAD.

usage: check_exit_codes.py SOURCE_DIR | --self-test
"""
import os
import re
import sys


def from_code(text):
    return {int(n) for n in re.findall(r"^\s*GW_EXIT_[A-Z_]+ = (\d+),", text, re.M)}


def from_tools(text):
    """The table after `Exit codes:` in docs/tools.md §1."""
    after = text.split("\nExit codes:\n", 1)[1]
    table = re.match(r"\s*(\|.*?\n)(?!\|)", after, re.S).group(1)
    return {int(n) for n in re.findall(r"^\| (\d+) \|", table, re.M)}


def from_man(text):
    section = text.split(".Sh EXIT STATUS", 1)[1].split("\n.Sh ", 1)[0]
    return {int(n) for n in re.findall(r"^\.It (\d+)$", section, re.M)}


def from_readme(text):
    """The paragraph that starts `Exit codes:`: each `N ` after the colon or a `; `."""
    para = re.search(r"^Exit codes: (.*?)(?:\n\n|\Z)", text, re.M | re.S).group(1)
    return {int(n) for n in re.findall(r"(?:^|; )(\d+) ", para.replace("\n", " "))}


def check(code, tools, man, readme):
    want = from_code(code)
    problems = []
    for name, got in (("docs/tools.md §1", from_tools(tools)), ("man/shardgate.1", from_man(man)),
                      ("README.md", from_readme(readme))):
        if got != want:
            problems.append("%s lists %s; gateway/core/exit.h has %s (missing %s, extra %s)"
                            % (name, sorted(got), sorted(want), sorted(want - got),
                               sorted(got - want)))
    return problems


def read(root, *path):
    with open(os.path.join(root, *path), encoding="utf-8") as f:
        return f.read()


def self_test():
    code = "enum gw_exit {\n    GW_EXIT_OK = 0,\n    GW_EXIT_USAGE = 64,\n};\n"
    tools = "x\nExit codes:\n\n| exit | meaning |\n|---|---|\n| 0 | ok |\n| 64 | usage |\n\nmore"
    man = ".Sh EXIT STATUS\n.Bl\n.It 0\nok\n.It 64\nusage\n.El\n.Sh EXAMPLES\n"
    readme = "Exit codes: 0 ok; 64 usage.\n\nnext"
    if check(code, tools, man, readme):
        return "a consistent set was refused: %r" % check(code, tools, man, readme)
    planted = check(code.replace("};", "    GW_EXIT_IN_USE = 75,\n};"), tools, man, readme)
    if len(planted) != 3 or not all("missing [75]" in p for p in planted):
        return "a code only in exit.h was not named in all three: %r" % planted
    return None


def main(argv):
    if argv[1:] == ["--self-test"]:
        fault = self_test()
    else:
        root = argv[1]
        problems = check(read(root, "gateway", "core", "exit.h"), read(root, "docs", "tools.md"),
                         read(root, "man", "shardgate.1"), read(root, "README.md"))
        for p in problems:
            print(p)
        fault = "\n".join(problems)
    print("RESULT: BAD" if fault else "RESULT: OK")
    if fault and argv[1:] == ["--self-test"]:
        print(fault)
    return 1 if fault else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
