"""Journal lines and their checksums (docs/journal.md §2.1)."""

import re
import zlib

from .contract import Unreadable

__all__ = ["line_record", "journal_lines"]

CRC_TAIL = re.compile(rb',"crc32":"([0-9a-f]{8})"\}')
CRC_MISMATCH = ("crc32", "the CRC-32 of the line's bytes", "checksum mismatch")


def line_record(line: bytes) -> tuple[bytes, bool | None]:
    """A journal line's record and the verdict of its checksum (docs/journal.md §2.1):
    (the record without the crc32 member, True) for a line whose checksum matches, (line, None)
    for a line without one, (line, False) for a line whose checksum does not match its bytes."""
    m = CRC_TAIL.fullmatch(line, len(line) - 20) if len(line) > 20 else None
    if m is None:
        return line, None
    if zlib.crc32(line[:-20]) != int(m.group(1), 16):
        return line, False
    return line[:-20] + b"}", True


def journal_lines(path: str, command: str = "plan") -> list[tuple[int, bytes, bool | None]]:
    """(line number, record bytes, checksum verdict) of every complete line of a journal, as
    line_record gives them; an unterminated last line is an append in progress and is left out.
    Raises Unreadable."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise Unreadable("%s: journal: %s: cannot read: %s" % (command, path, e.strerror or e))
    lines = raw.split(b"\n")
    return [(n,) + line_record(line) for n, line in enumerate(lines[:-1], 1)]
