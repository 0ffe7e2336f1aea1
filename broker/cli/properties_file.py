"""`--broker-config-file PATH`: a Kafka `server.properties` read as Java's
`java.util.Properties.load(InputStream)` reads it (Kafka's `Utils.loadProps`), so the same file
configures a Kafka broker and zkbroker.

The file is ISO-8859-1, with Properties' comments, continuations, separators and escapes; a
later duplicate key wins. Its entries are applied before the `--broker-config` ones, with the
same checks, errors naming the file and line (`zkbroker.broker.cli.config_options`).

Not here: Kafka's `config.providers` indirections (`${file:...}`), the `--override` flag itself.
"""

from __future__ import annotations

from pathlib import Path

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


def read_broker_config_file(path: str) -> tuple[tuple[str, str, int], ...]:
    """The file's entries as (key, value, line): the last of duplicate keys only (its own
    line), where the first of them stood; PropertiesError when it cannot be read."""
    try:
        text = Path(path).read_bytes().decode("iso-8859-1")
    except OSError as e:
        raise PropertiesError(f"--broker-config-file {path}: {e.strerror or e}") from None
    last: dict[str, tuple[str, int]] = {}
    for key, value, line in parse_properties(text, path):
        last[key] = (value, line)
    return tuple((key, value, line) for key, (value, line) in last.items())
