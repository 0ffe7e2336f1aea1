"""JAAS configuration: `sasl.jaas.config` text (Kafka's `JaasConfig` parser) and JAAS files
(`java.security.auth.login.config`, the JDK's `ConfigFile`), as StreamTokenizer reads them.

Enough for a ZooKeeper-mode broker's logins: PlainLoginModule's `user_<name>` options (PLAIN's
users), the `username`/`password` options (read by `zkbroker.broker.security.sasl_client`),
Krb5LoginModule's (read by `zkbroker.broker.security.gssapi_server`). `server_section` picks
the broker's server login context as `JaasContext.loadServerContext` does
(`<listener>.KafkaServer`, else `KafkaServer`; only `KafkaServer` before 1.1).

Not here: `${system.property}` expansion, the `Client` section's ZooKeeper login
(`zkbroker.broker.settings`), listener-prefixed overrides
(`zkbroker.broker.security.listener_config`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
# The JDK's Kerberos login (GSSAPI): keyTab, principal, useKeyTab, storeKey, serviceName.
KRB5_LOGIN_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
SERVER_CONTEXT = "KafkaServer"
_FLAGS = ("required", "requisite", "sufficient", "optional")
_PUNCTUATION = "{};="
# StreamTokenizer's escapes inside a quoted string (octal escapes are handled apart).
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}

#: (login module class, control flag, options) of one entry.
Module = tuple[str, str, dict[str, str]]


class JaasError(ValueError):
    pass


def _quoted(text: str, start: int) -> tuple[str, int]:
    """The string that starts with the quote at `start`, and the position after it."""
    out: list[str] = []
    i = start + 1
    while i < len(text):
        char = text[i]
        if char == '"':
            return "".join(out), i + 1
        if char in "\r\n":  # StreamTokenizer ends a quoted string at the end of the line
            break
        if char == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in "01234567":
                digits = nxt
                limit = 3 if nxt in "0123" else 2
                while len(digits) < limit and i + 1 + len(digits) < len(text):
                    more = text[i + 1 + len(digits)]
                    if more not in "01234567":
                        break
                    digits += more
                out.append(chr(int(digits, 8)))
                i += 1 + len(digits)
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(char)
        i += 1
    raise JaasError(f"Invalid JAAS config: unterminated quoted string at {start}")


def _tokens(text: str) -> Iterator[tuple[str, str]]:
    """(kind, text) tokens: "word", "value" (quoted) or the punctuation itself."""
    i = 0
    while i < len(text):
        char = text[i]
        if char.isspace():
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise JaasError("Invalid JAAS config: unterminated /* comment")
            i = end + 2
        elif char == '"':
            value, i = _quoted(text, i)
            yield "value", value
        elif char in _PUNCTUATION:
            yield char, char
            i += 1
        else:
            start = i
            while (
                i < len(text)
                and not text[i].isspace()
                and text[i] not in _PUNCTUATION
                and text[i] != '"'
                and not text.startswith("//", i)
                and not text.startswith("/*", i)
            ):
                i += 1
            yield "word", text[start:i]


def _modules(
    tokens: list[tuple[str, str]], i: int, end_kind: str | None
) -> tuple[list[Module], int]:
    """Login module entries from `tokens[i]` up to a token of `end_kind` (None: the end)."""
    modules: list[Module] = []
    while i < len(tokens) and tokens[i][0] != end_kind:
        if tokens[i][0] != "word" or i + 1 >= len(tokens) or tokens[i + 1][0] != "word":
            raise JaasError("Invalid JAAS config: expected a login module and a control flag")
        module, flag = tokens[i][1], tokens[i + 1][1].lower()
        if flag not in _FLAGS:
            raise JaasError(f"Invalid JAAS config: invalid control flag {tokens[i + 1][1]}")
        i += 2
        options: dict[str, str] = {}
        while i < len(tokens) and tokens[i][0] not in (";", end_kind):
            if (
                i + 2 >= len(tokens)
                or tokens[i][0] != "word"
                or tokens[i + 1][0] != "="
                or tokens[i + 2][0] not in ("word", "value")
            ):
                raise JaasError("Invalid JAAS config: expected option=value")
            options[tokens[i][1]] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens) or tokens[i][0] != ";":
            raise JaasError("Invalid JAAS config: missing ';' at the end of a login module")
        i += 1
        modules.append((module, flag, options))
    return modules, i


def parse_modules(text: str) -> list[Module]:
    """(login module class, control flag, options) for each entry of a `sasl.jaas.config`."""
    tokens = list(_tokens(text))
    modules, _ = _modules(tokens, 0, None)
    if not modules:
        raise JaasError("JAAS config property does not contain any login modules")
    return modules


@dataclass(frozen=True)
class JaasFile:
    """A JAAS file's sections by name (the JDK's ConfigFile: a later section of the same name
    adds its modules to the earlier one's)."""

    path: str
    sections: Mapping[str, tuple[Module, ...]]

    def server_section(
        self, listener: str, release: tuple[int, ...] = (3, 9)
    ) -> tuple[str, tuple[Module, ...]] | None:
        """The section a broker's `listener` logs in with (its name and modules), or None."""
        if release >= (1, 1):
            name = f"{listener.lower()}.{SERVER_CONTEXT}"
            if name in self.sections:
                return name, self.sections[name]
        if SERVER_CONTEXT in self.sections:
            return SERVER_CONTEXT, self.sections[SERVER_CONTEXT]
        return None

    def missing_section_message(self, listener: str, release: tuple[int, ...] = (3, 9)) -> str:
        """Kafka's JaasContext.defaultContext text when no section serves the listener."""
        names = SERVER_CONTEXT
        if release >= (1, 1):
            names = f"{listener.lower()}.{SERVER_CONTEXT} or {SERVER_CONTEXT}"
        return (
            f"Could not find a '{names}' entry in the JAAS configuration. System property "
            f"'java.security.auth.login.config' is {self.path}"
        )


def parse_jaas_file(text: str, path: str = "<jaas>") -> JaasFile:
    """The sections of a JAAS file's text; JaasError (naming `path`) when it is malformed."""
    try:
        tokens = list(_tokens(text))
        sections: dict[str, list[Module]] = {}
        i = 0
        while i < len(tokens):
            if tokens[i][0] != "word" or i + 1 >= len(tokens) or tokens[i + 1][0] != "{":
                raise JaasError("expected a section name and '{'")
            name = tokens[i][1]
            modules, i = _modules(tokens, i + 2, "}")
            if i >= len(tokens):
                raise JaasError(f"section {name}: missing '}}'")
            if i + 1 >= len(tokens) or tokens[i + 1][0] != ";":
                raise JaasError(f"section {name}: expected ';' after '}}'")
            i += 2
            sections.setdefault(name, []).extend(modules)
    except JaasError as e:
        reason = str(e).removeprefix("Invalid JAAS config: ")
        raise JaasError(f"JAAS file {path}: {reason}") from None
    return JaasFile(path, {name: tuple(mods) for name, mods in sections.items()})


def read_jaas_file(path: str) -> JaasFile:
    """The JAAS file at `path` (UTF-8, as the JDK reads it by default); JaasError when it
    cannot be read or parsed."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise JaasError(f"JAAS file {path}: {reason}") from None
    return parse_jaas_file(text, path)


def module_plain_users(modules: list[Module] | tuple[Module, ...]) -> dict[str, str]:
    """The `user_<name>` passwords of the PlainLoginModule entries."""
    users: dict[str, str] = {}
    for module, _, options in modules:
        if module != PLAIN_LOGIN_MODULE:
            continue
        for key, value in options.items():
            if key.startswith("user_"):
                users[key[len("user_") :]] = value
    return users


def module_credentials(
    modules: list[Module] | tuple[Module, ...],
) -> tuple[str, str] | None:
    """(username, password) of the first PlainLoginModule / ScramLoginModule entry naming
    both (Kafka's SaslClientCallbackHandler takes them from whichever module put them in the
    subject), None when none does."""
    for module, _, options in modules:
        if module not in (PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE):
            continue
        username, password = options.get("username"), options.get("password")
        if username is not None and password is not None:
            return username, password
    return None


def module_kerberos_options(modules: list[Module] | tuple[Module, ...]) -> dict[str, str] | None:
    """The options of the first Krb5LoginModule entry (the broker's GSSAPI login), None when
    there is none."""
    for module, _, options in modules:
        if module == KRB5_LOGIN_MODULE:
            return dict(options)
    return None


def plain_users(text: str) -> dict[str, str]:
    """The `user_<name>` passwords of the PlainLoginModule entries of the text."""
    return module_plain_users(parse_modules(text))


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def plain_jaas_config(users: dict[str, str], login: tuple[str, str] | None = None) -> str:
    """A PlainLoginModule entry naming these users (the toolkit's and CLI's convenience) and,
    with `login`, the broker's own `username`/`password` (its inter-broker login)."""
    options = " ".join(f"user_{name}={_quote(pw)}" for name, pw in users.items())
    if login is not None:
        options = f"username={_quote(login[0])} password={_quote(login[1])} {options}".strip()
    return f"{PLAIN_LOGIN_MODULE} required {options};"


def scram_jaas_config(username: str, password: str) -> str:
    """A ScramLoginModule entry with the broker's own login (its inter-broker login)."""
    return f"{SCRAM_LOGIN_MODULE} required username={_quote(username)} password={_quote(password)};"
