"""Kafka's Kerberos short names (`sasl.kerberos.principal.to.local.rules`) as pure code: a GSSAPI
client's principal `alice/host@REALM` becomes the name of its `User:` principal.

`KerberosName.parse` splits `service[/host]@realm` (a name without `@` is simple and kept as
is). Rules are tried in order and the first that applies gives the name:
- `DEFAULT`: the first component, for a name of the default realm (`alice@REALM` -> `alice`);
- `RULE:[n:format](match)s/from/to/[g][/L|/U]`: for a name of `n` components, `format` with
  `$0` (realm), `$1`, `$2` (components) replaced; it applies when the optional `match` regex
  matches all of it; then the optional sed-like substitution (first match, every one with
  `g`, Java's `$1` group references in `to`), and `/L` lowers (1.1+, KAFKA-5764), `/U` raises
  (2.4+) the case of the result.
A result that still holds `/` or `@` is an error ("Non-simple name"), and so is a name no rule
applies to (`NoMatchingRule`). A rule the release's grammar does not read is refused when the
rules are parsed (`ValueError`, Kafka's "Invalid rule").

Rule regexes are Java's; Python's `re` reads them, with `(?<name>` and `\\Q...\\E` translated.
Deliberately not here: where the default realm comes from (the broker's krb5 configuration,
`zkbroker.broker.security.gssapi_server`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

Release = tuple[int, ...]

# Kafka's rule grammar, per release: the case suffix came in two steps.
_RULE_HEAD = r"RULE:\[(?P<n>\d*):(?P<format>[^\]]*)\]"
_RULE_MATCH = r"(?:\((?P<match>[^)]*)\))?"
_RULE_SED = r"(?:s/(?P<from>[^/]*)/(?P<to>[^/]*)/(?P<g>g)?)?"


def _grammar(release: Release) -> re.Pattern[str]:
    if release >= (2, 4):
        case = r"/?(?P<case>L|U)?"
    elif release >= (1, 1):
        case = r"/?(?P<case>L)?"
    else:
        case = ""
    return re.compile(rf"(?P<default>DEFAULT)|{_RULE_HEAD}{_RULE_MATCH}{_RULE_SED}{case}")


_NAME = re.compile(r"(?P<service>[^/@]*)(?:/(?P<host>[^/@]*))?@(?P<realm>[^/@]*)")
_PARAMETER = re.compile(r"(?P<text>[^$]*)(?P<ref>\$(?P<digits>\d*))?")
_NON_SIMPLE = re.compile(r"[/@]")


class NoMatchingRule(ValueError):
    """No rule gave a simple name (Kafka's NoMatchingRule)."""


class BadFormatString(ValueError):
    """A rule's format names a component the principal does not have (or no number)."""


@dataclass(frozen=True)
class KerberosName:
    service: str
    host: str | None = None
    realm: str | None = None

    @staticmethod
    def parse(text: str) -> KerberosName:
        """ValueError ("Malformed Kerberos name") for a name with `@` that is not
        `service[/host]@realm`."""
        m = _NAME.fullmatch(text)
        if m is None:
            if "@" in text:
                raise ValueError(f"Malformed Kerberos name: {text}")
            return KerberosName(text)
        return KerberosName(m["service"], m["host"], m["realm"])

    def __str__(self) -> str:
        host = f"/{self.host}" if self.host is not None else ""
        realm = f"@{self.realm}" if self.realm is not None else ""
        return f"{self.service}{host}{realm}"


def java_regex(pattern: str) -> re.Pattern[str]:
    """A Java regex compiled by Python's `re`: named groups and `\\Q...\\E` quoting translated;
    ValueError for what `re` cannot read."""

    def quote(m: re.Match[str]) -> str:
        return re.escape(m.group(1))

    text = re.sub(r"\\Q(.*?)(?:\\E|$)", quote, pattern, flags=re.DOTALL)
    text = re.sub(r"(?<!\\)\(\?<(?=[A-Za-z])", "(?P<", text)
    try:
        return re.compile(text)
    except re.error as e:
        raise ValueError(f"regex {pattern!r}: {e}") from None


def java_replacement(template: str, pattern: re.Pattern[str]) -> Callable[[re.Match[str]], str]:
    """`Matcher.appendReplacement`'s reading of `template`: `$n` (as many digits as name a
    group), `${name}`, `\\x` for a literal x. ValueError for an illegal reference, checked
    when a match is replaced, as Java does."""

    def replace(m: re.Match[str]) -> str:
        out: list[str] = []
        i = 0
        while i < len(template):
            char = template[i]
            if char == "\\":
                i += 1
                if i >= len(template):
                    raise ValueError("character to be escaped is missing")
                out.append(template[i])
                i += 1
            elif char == "$":
                i += 1
                if i >= len(template):
                    raise ValueError("Illegal group reference: group index is missing")
                if template[i] == "{":
                    end = template.find("}", i)
                    if end < 0:
                        raise ValueError("named capturing group is missing trailing '}'")
                    name = template[i + 1 : end]
                    if name not in pattern.groupindex:
                        raise ValueError(f"No group with name {{{name}}}")
                    out.append(m.group(name) or "")
                    i = end + 1
                    continue
                if not template[i].isdigit() or not template[i].isascii():
                    raise ValueError("Illegal group reference")
                number = int(template[i])
                i += 1
                while i < len(template) and template[i].isascii() and template[i].isdigit():
                    longer = number * 10 + int(template[i])
                    if longer > pattern.groups:
                        break
                    number = longer
                    i += 1
                if number > pattern.groups:
                    raise ValueError(f"No group {number}")
                out.append(m.group(number) or "")
            else:
                out.append(char)
                i += 1
        return "".join(out)

    return replace


def replace_parameters(fmt: str, params: Sequence[str]) -> str:
    """`fmt` with `$0`, `$1`, ... replaced by `params` (realm first, then the components);
    BadFormatString for `$` without a number or a number outside them."""
    out: list[str] = []
    start = 0
    while start < len(fmt):
        m = _PARAMETER.match(fmt, start)
        assert m is not None  # the pattern matches the empty string
        out.append(m["text"])
        if m["ref"] is not None:
            digits = m["digits"]
            if not digits:
                raise BadFormatString(f"bad format in username mapping in {digits}")
            number = int(digits)
            if number >= len(params):
                raise BadFormatString(
                    f"index {number} from {fmt} is outside of the valid range 0 to "
                    f"{len(params) - 1}"
                )
            out.append(params[number])
        if m.end() == start:
            break  # only reachable on an empty match, which ends the loop in Java too
        start = m.end()
    return "".join(out)


@dataclass(frozen=True)
class KerberosRule:
    default: bool
    components: int = 0
    format: str = ""
    match: str | None = None
    from_pattern: str | None = None
    to: str = ""
    repeat: bool = False
    lower: bool = False
    upper: bool = False

    def __str__(self) -> str:
        """The rule as Kafka prints it in its messages."""
        if self.default:
            return "DEFAULT"
        text = f"RULE:[{self.components}:{self.format}]"
        if self.match is not None:
            text += f"({self.match})"
        if self.from_pattern is not None:
            text += f"s/{self.from_pattern}/{self.to}/" + ("g" if self.repeat else "")
        if self.lower:
            text += "/L"
        if self.upper:
            text += "/U"
        return text

    def apply(self, params: Sequence[str], default_realm: str) -> str | None:
        """The short name this rule gives `params` (realm, components...), None when it does
        not apply; NoMatchingRule for a non-simple result."""
        result: str | None = None
        if self.default:
            if params[0] == default_realm:
                result = params[1]
        elif len(params) - 1 == self.components:
            base = replace_parameters(self.format, params)
            if self.match is None or java_regex(self.match).fullmatch(base) is not None:
                if self.from_pattern is None:
                    result = base
                else:
                    pattern = java_regex(self.from_pattern)
                    result = pattern.sub(
                        java_replacement(self.to, pattern), base, count=0 if self.repeat else 1
                    )
        if result is not None and _NON_SIMPLE.search(result):
            raise NoMatchingRule(f"Non-simple name {result} after auth_to_local rule {self}")
        if result is not None and self.lower:
            return result.lower()
        if result is not None and self.upper:
            return result.upper()
        return result


def parse_rule(text: str, release: Release = (3, 9)) -> KerberosRule:
    """One rule as `release` reads it; ValueError (Kafka's "Invalid rule") otherwise."""
    m = _grammar(release).match(text)
    if m is None or not m.group(0):
        raise ValueError(f"Invalid rule: {text}")
    if m.end() != len(text):
        raise ValueError(f"Invalid rule: `{text}`, unmatched substring: `{text[m.end() :]}`")
    if m["default"]:
        return KerberosRule(default=True)
    if not m["n"]:
        # Integer.parseInt of the empty component count.
        raise ValueError(f'Invalid rule: {text} (For input string: "")')
    groups = m.groupdict()
    case = groups.get("case")
    rule = KerberosRule(
        default=False,
        components=int(m["n"]),
        format=m["format"],
        match=m["match"],
        from_pattern=m["from"],
        to=m["to"] or "",
        repeat=m["g"] == "g",
        lower=case == "L",
        upper=case == "U",
    )
    # Java compiles the patterns when the rule is built: a bad regex is refused at start.
    for pattern in (rule.match, rule.from_pattern):
        if pattern is not None:
            java_regex(pattern)
    return rule


def config_rules(value: str) -> list[str]:
    """`sasl.kerberos.principal.to.local.rules` as Kafka's LIST type splits it (on commas,
    whitespace around them dropped; an empty value is no rule at all)."""
    text = value.strip()
    if not text:
        return []
    return re.split(r"\s*,\s*", text)


@dataclass(frozen=True)
class KerberosShortNamer:
    default_realm: str
    rules: tuple[KerberosRule, ...]

    @staticmethod
    def parse(
        default_realm: str, rules: Sequence[str] | None, release: Release = (3, 9)
    ) -> KerberosShortNamer:
        """None for `rules` is Kafka's default, `DEFAULT` alone."""
        texts = ["DEFAULT"] if rules is None else list(rules)
        return KerberosShortNamer(default_realm, tuple(parse_rule(t, release) for t in texts))

    def short_name(self, name: KerberosName) -> str:
        """NoMatchingRule (or BadFormatString) when no rule gives a simple name."""
        if name.host is None:
            if name.realm is None:
                return name.service
            params: tuple[str, ...] = (name.realm, name.service)
        else:
            params = (name.realm or "", name.service, name.host)
        for rule in self.rules:
            got = rule.apply(params, self.default_realm)
            if got is not None:
                return got
        listed = ", ".join(str(r) for r in self.rules)
        raise NoMatchingRule(f"No rules apply to {name}, rules [{listed}]")
