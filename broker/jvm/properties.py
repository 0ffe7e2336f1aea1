"""Java's `java.util.Properties` text, read as `Properties.load(InputStream)` reads it: the
format of Kafka's `server.properties` and ZooKeeper's `zoo.cfg`.

Comments, continuations, separators and escapes as Properties has them; the caller decodes the
bytes (ISO-8859-1, as `load(InputStream)` does) and decides what duplicates mean.

Not here: what any key means, files (`zkbroker.broker.cli.properties_file` reads Kafka's,
`zkbroker.broker.zookeeper.server_main` ZooKeeper's).
"""

from __future__ import annotations

_BLANKS = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class PropertiesError(ValueError):
    """A file that cannot be read as Java properties (names the file and line)."""


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(line number, logical line) pairs, comments and blank lines dropped, continuations
    joined (the backslash-newline and the next line's leading blanks removed)."""
    natural = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    lines: list[tuple[int, str]] = []
    i = 0
    while i < len(natural):
        number, line = i + 1, natural[i].lstrip(_BLANKS)
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and i < len(natural):
            line = line[:-1] + natural[i].lstrip(_BLANKS)
            i += 1
        if _continues(line):  # a continuation at the end of the file
            line = line[:-1]
        lines.append((number, line))
    return lines


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _unescape(text: str, where: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\" or i + 1 >= len(text):
            out.append(char)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise PropertiesError(f"{where}: Malformed \\uxxxx encoding.")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    """The raw key and value of a logical line (escapes still in them)."""
    i = 0
    while i < len(line):
        char = line[i]
        if char == "\\":
            i += 2
            continue
        if char in "=:" or char in _BLANKS:
            break
        i += 1
    key, rest = line[:i], line[i:]
    rest = rest.lstrip(_BLANKS)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_BLANKS)
    return key, rest


def parse_properties(text: str, source: str = "<properties>") -> list[tuple[str, str, int]]:
    """(key, value, line number) of each entry in file order; duplicates are kept (the caller
    applies them in order, so the last one wins as in Properties)."""
    entries = []
    for number, line in _logical_lines(text):
        raw_key, raw_value = _split(line)
        where = f"{source}:{number}"
        entries.append((_unescape(raw_key, where), _unescape(raw_value, where), number))
    return entries
