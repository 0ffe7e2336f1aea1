"""Kafka's ``Sanitizer`` for user principals and client ids used as znode names under
``/config/users`` and ``/config/clients``.

``sanitize``: Java ``URLEncoder.encode(name, UTF-8)`` (ASCII letters, digits and ``.-*_`` kept,
space -> ``+``, every other byte of the UTF-8 encoding -> ``%XX`` upper-case), then ``*`` ->
``%2A`` and ``+`` -> ``%20``. So ``"user 1*"`` becomes ``"user%201%2A"`` and ``"~"`` becomes
``"%7E"`` (Java, unlike Python's ``quote``, escapes ``~``).

``desanitize``: Java ``URLDecoder.decode`` — ``%XX`` sequences are bytes of UTF-8, ``+`` is a space;
a malformed escape raises ``ValueError`` as Java throws ``IllegalArgumentException``.

Deliberately not here: deciding *which* names are sanitized. ``<default>`` (the default entity)
and topic names / broker ids are used verbatim; ``nodes.config`` knows that.
"""

from __future__ import annotations

from typing import Final

_UNRESERVED: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
_HEX: Final = frozenset("0123456789abcdefABCDEF")


def sanitize(name: str) -> str:
    out: list[str] = []
    for byte in name.encode("utf-8", errors="surrogatepass"):
        ch = chr(byte)
        if ch in _UNRESERVED:
            out.append(ch)
        elif ch == " ":
            # URLEncoder would write '+', which Sanitizer then rewrites to %20.
            out.append("%20")
        else:
            # '*' lands here too: Sanitizer turns it into %2A as JMX reads '*' as a wildcard.
            out.append(f"%{byte:02X}")
    return "".join(out)


def desanitize(name: str) -> str:
    buf = bytearray()
    i = 0
    while i < len(name):
        ch = name[i]
        if ch == "%":
            digits = name[i + 1 : i + 3]
            if len(digits) != 2 or not set(digits) <= _HEX:
                raise ValueError(f"malformed %-escape at offset {i} in {name!r}")
            buf.append(int(digits, 16))
            i += 3
        elif ch == "+":
            buf.append(0x20)
            i += 1
        else:
            buf.extend(ch.encode("utf-8"))
            i += 1
    try:
        return buf.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"%-escapes in {name!r} are not UTF-8: {exc}") from None
