"""Where a defect of the mutation gate applies (docs/tools.md §5). A defect names a part's folder
and the definition it breaks, `gateway:gw_journal_append` (a C function or struct, a Python def
or class), or a folder alone, `gateway/store`, when its text stands outside any definition. Its
text must occur exactly once in the definitions of that name (static functions of several files
may share it), or once in the folder's sources: code moves
between the files and sub-folders of its part, and its defects follow it."""
import os
import re

SOURCES = (".c", ".h", ".py")


def source_files(root, folder):
    """The part's C and Python sources, in a fixed order."""
    top = os.path.join(root, folder)
    if os.path.isfile(top):
        return [top]
    found = []
    for d, dirs, files in os.walk(top):
        dirs[:] = sorted(x for x in dirs if not x.startswith(".") and x != "__pycache__")
        found += [os.path.join(d, f) for f in sorted(files) if f.endswith(SOURCES)]
    return found


def c_definitions(text, name):
    """(start, end) of each C definition of `name`: a function (a line at column 0 naming it
    before `(`, whose `{` comes before any `;`) or a struct, up to its closing `}` at column 0."""
    head = re.compile(r"^(?![#\s/*])[^\n;{}]*?(?:\b(?P<fn>%s)\s*\(|\bstruct %s\s*\{)"
                      % (re.escape(name), re.escape(name)), re.M)
    for m in head.finditer(text):
        brace, semi = text.find("{", m.start()), text.find(";", m.start())
        if m.group("fn") and (brace < 0 or 0 <= semi < brace):
            continue  # a declaration
        end = text.find("\n}", brace)
        yield m.start(), len(text) if end < 0 else end + 2


def py_definitions(text, name):
    """(start, end) of each Python `def name` or `class name`, at any depth, up to the next
    line indented no deeper than its own."""
    for m in re.finditer(r"^([ \t]*)(?:def|class) %s\b" % re.escape(name), text, re.M):
        end = len(text)
        for line in re.finditer(r"^([ \t]*)\S", text[m.end():], re.M):
            if line.start() > 0 and len(line.group(1)) <= len(m.group(1)):
                end = m.end() + line.start()
                break
        yield m.start(), end


def definitions(path, text, name):
    return list((py_definitions if path.endswith(".py") else c_definitions)(text, name))


def locate(root, where, old):
    """(path, text, at): the file and the offset where `old` occurs exactly once in the region
    `where` names; LookupError says why it does not."""
    folder, _, name = where.partition(":")
    files = source_files(root, folder)
    if not files:
        raise LookupError("no sources under %s" % folder)
    regions, hits = 0, []  # definitions of the name; occurrences of the text
    for path in files:
        with open(path) as f:
            text = f.read()
        spans = definitions(path, text, name) if name else [(0, len(text))]
        regions += len(spans)
        for start, end in spans:
            at = text.find(old, start, end)
            while at >= 0:
                hits.append((path, text, at))
                at = text.find(old, at + 1, end)
    if name and not regions:
        raise LookupError("no definition of %s under %s" % (name, folder))
    if len(hits) != 1:
        raise LookupError("its text occurs %d times in %s (must be once)" % (len(hits), where))
    return hits[0]


def apply(root, where, old, new):
    """Patches the one occurrence; returns (path, original text) to put back."""
    path, text, at = locate(root, where, old)
    with open(path, "w") as f:
        f.write(text[:at] + new + text[at + len(old):])
    return path, text


def restore(path, text):
    with open(path, "w") as f:
        f.write(text)
