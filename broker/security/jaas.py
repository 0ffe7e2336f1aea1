"""The JAAS configuration text of `sasl.jaas.config` (Kafka's `JaasConfig` parser), enough for
the PLAIN login module's users.

`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin"
password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";` gives the users
`{"admin": "admin-secret", "alice": "alice-secret"}` (PlainServerCallbackHandler reads the
`user_<name>` options). Values may be quoted (with backslash escapes) or bare words, as Java's
StreamTokenizer reads them.

The `username`/`password` options (a broker's own login towards its peers) are read by
`zkbroker.broker.security.sasl_client`.

Deliberately not here: JAAS files (`java.security.auth.login.config`) and other modules' options.
"""

from __future__ import annotations

import re

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(r'\s*(?:"((?:\\.|[^"\\])*)"|([^\s=;"]+)|(=)|(;))')


class JaasError(ValueError):
    pass


def parse_modules(text: str) -> list[tuple[str, str, dict[str, str]]]:
    """(login module class, control flag, options) for each entry of the text."""
    tokens: list[tuple[str, str]] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise JaasError(f"Unexpected character at {pos} in JAAS config")
        pos = m.end()
        quoted, word, eq, semi = m.groups()
        if quoted is not None:
            tokens.append(("value", re.sub(r"\\(.)", r"\1", quoted)))
        elif word is not None:
            tokens.append(("word", word))
        elif eq is not None:
            tokens.append(("=", "="))
        elif semi is not None:
            tokens.append((";", ";"))
        if not text[pos:].strip():
            break
    modules: list[tuple[str, str, dict[str, str]]] = []
    i = 0
    while i < len(tokens):
        if tokens[i][0] != "word" or i + 1 >= len(tokens) or tokens[i + 1][0] != "word":
            raise JaasError("Invalid JAAS config: expected a login module and a control flag")
        module, flag = tokens[i][1], tokens[i + 1][1].lower()
        if flag not in _FLAGS:
            raise JaasError(f"Invalid JAAS config: invalid control flag {tokens[i + 1][1]}")
        i += 2
        options: dict[str, str] = {}
        while i < len(tokens) and tokens[i][0] != ";":
            if i + 2 >= len(tokens) or tokens[i][0] != "word" or tokens[i + 1][0] != "=":
                raise JaasError("Invalid JAAS config: expected option=value")
            options[tokens[i][1]] = tokens[i + 2][1]
            i += 3
        if i >= len(tokens):
            raise JaasError("Invalid JAAS config: missing ';' at the end of a login module")
        i += 1
        modules.append((module, flag, options))
    if not modules:
        raise JaasError("JAAS config property does not contain any login modules")
    return modules


def plain_users(text: str) -> dict[str, str]:
    """The `user_<name>` passwords of the PlainLoginModule entries of the text."""
    users: dict[str, str] = {}
    for module, _, options in parse_modules(text):
        if module != PLAIN_LOGIN_MODULE:
            continue
        for key, value in options.items():
            if key.startswith("user_"):
                users[key[len("user_") :]] = value
    return users


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
    module = "org.apache.kafka.common.security.scram.ScramLoginModule"
    return f"{module} required username={_quote(username)} password={_quote(password)};"
