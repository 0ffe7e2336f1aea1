"""Kafka's `SslPrincipalMapper` (KIP-371, `ssl.principal.mapping.rules`): the principal name of
a TLS client from its certificate's distinguished name.

Rules are a comma-separated list of `DEFAULT` or `RULE:pattern/replacement/[LU]`; the first
rule whose pattern matches the whole DN gives the name (the replacement applied, then lowered
with `/L` or uppercased with `/U`); `DEFAULT` gives the DN unchanged. No rule matching is an
authentication failure (Kafka's NoMatchingRule). Java's `$1` group references in replacements
are honoured.

`rfc2253(subject)` renders the subject of `ssl.SSLSocket.getpeercert()` as Java's
`X500Principal.getName()` does: the RDNs from the last to the first, `CN=...,OU=...,O=...`.
Attributes Java has no keyword for are written `OID=value` here (Java writes `OID=#hex`).

Deliberately not here: `principal.builder.class` (a custom KafkaPrincipalBuilder).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_RULE = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(?:,\s*|$)")
_PARSER = re.compile(_RULE)

_KEYWORDS = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


class NoMatchingRule(ValueError):
    pass


@dataclass(frozen=True)
class _Rule:
    default: bool
    pattern: re.Pattern[str] | None = None
    replacement: str = ""
    case: str = ""

    def apply(self, dn: str) -> str | None:
        if self.default:
            return dn
        assert self.pattern is not None
        if self.pattern.fullmatch(dn) is None:
            return None
        result = self.pattern.sub(self.replacement, dn)
        if self.case == "L":
            return result.lower()
        if self.case == "U":
            return result.upper()
        return result


@dataclass(frozen=True)
class PrincipalMapper:
    rules_text: str
    rules: tuple[_Rule, ...]

    @staticmethod
    def parse(text: str) -> PrincipalMapper:
        """ValueError for a rule that is not DEFAULT or RULE:... (Kafka's IllegalArgument)."""
        rules: list[_Rule] = []
        stripped = text.strip()
        for m in _SPLITTER.finditer(stripped):
            whole = m.group(1)
            # Java's lookingAt: the first alternative that matches a prefix, which must be
            # the whole rule (the last alternative matches the empty prefix of anything).
            parsed = _PARSER.match(whole)
            if parsed is None or parsed.end() != len(whole):
                raise ValueError(f"Invalid rule: {whole}")
            if parsed.group(1):
                rules.append(_Rule(default=True))
                continue
            if parsed.group(2) is None:
                continue  # an empty rule is ignored
            replacement = re.sub(r"\$(\d)", r"\\g<\1>", parsed.group(3))
            rules.append(
                _Rule(
                    default=False,
                    pattern=re.compile(parsed.group(2)),
                    replacement=replacement,
                    case=parsed.group(4) or "",
                )
            )
        return PrincipalMapper(text, tuple(rules))

    def name(self, dn: str) -> str:
        for rule in self.rules:
            got = rule.apply(dn)
            if got is not None:
                return got
        raise NoMatchingRule(f"No rules apply to {dn}, rules {list(self._texts())}")

    def _texts(self) -> Iterable[str]:
        return [t.strip() for t in self.rules_text.split(",") if t.strip()]


def _escape(value: str) -> str:
    out = re.sub(r'([,+"\\<>;])', r"\\\1", value)
    if out.startswith((" ", "#")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def rfc2253(subject: Iterable[Iterable[tuple[str, str]]]) -> str:
    """Java's X500Principal.getName() of a `getpeercert()['subject']`."""
    rdns = []
    for rdn in reversed(list(subject)):
        rdns.append("+".join(f"{_KEYWORDS.get(k, k)}={_escape(v)}" for k, v in rdn))
    return ",".join(rdns)
