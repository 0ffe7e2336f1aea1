"""AclAuthorizer's matching and decision rules (zkbroker.broker.rules.acl_matching), as pure
code."""

from __future__ import annotations

import pytest

from zkbroker.broker.rules import acl_matching as m

ALICE, HOST = "User:alice", "10.0.0.1"


def _entry(op: int, perm: int = m.ALLOW, principal: str = ALICE, host: str = "*") -> m.Entry:
    return m.Entry(principal, host, op, perm)


def _index(*acls: tuple[m.Pattern, m.Entry]) -> m.AclIndex:
    index = m.AclIndex()
    grouped: dict[m.Pattern, set[m.Entry]] = {}
    for pattern, entry in acls:
        grouped.setdefault(pattern, set()).add(entry)
    for pattern, entries in grouped.items():
        index.put(pattern, frozenset(entries), 0)
    return index


def _ok(index: m.AclIndex, op: int, name: str = "orders", **config: object) -> bool:
    cfg = m.AuthorizerConfig(**config)  # type: ignore[arg-type]
    return m.authorize(index, cfg, ALICE, HOST, op, m.TOPIC, name)


def test_no_acls_follows_allow_everyone() -> None:
    assert not _ok(m.AclIndex(), m.READ)
    assert _ok(m.AclIndex(), m.READ, allow_if_no_acls=True)


def test_super_user_passes_everything() -> None:
    deny = _index((m.Pattern(m.TOPIC, "*"), _entry(m.ALL, m.DENY)))
    assert _ok(deny, m.DELETE, super_users=frozenset({ALICE}))


@pytest.mark.parametrize(
    ("granted", "asked", "expected"),
    [
        (m.READ, m.DESCRIBE, True),
        (m.WRITE, m.DESCRIBE, True),
        (m.DELETE, m.DESCRIBE, True),
        (m.ALTER, m.DESCRIBE, True),
        (m.ALTER_CONFIGS, m.DESCRIBE_CONFIGS, True),
        (m.DESCRIBE, m.READ, False),
        (m.ALL, m.ALTER_CONFIGS, True),
        (m.CREATE, m.DESCRIBE, False),
    ],
)
def test_implied_operations(granted: int, asked: int, expected: bool) -> None:
    index = _index((m.Pattern(m.TOPIC, "orders"), _entry(granted)))
    assert _ok(index, asked) is expected


def test_deny_wins_and_is_not_implied() -> None:
    index = _index(
        (m.Pattern(m.TOPIC, "orders"), _entry(m.READ)),
        (m.Pattern(m.TOPIC, "ord", m.PT_PREFIXED), _entry(m.READ, m.DENY)),
    )
    assert not _ok(index, m.READ)
    # A DENY of READ does not deny DESCRIBE (only the exact operation or ALL).
    assert _ok(index, m.DESCRIBE)


def test_wildcards_prefixes_principal_and_host() -> None:
    index = _index(
        (m.Pattern(m.TOPIC, "*"), _entry(m.READ, principal="User:*")),
        (m.Pattern(m.TOPIC, "pay-", m.PT_PREFIXED), _entry(m.WRITE, host=HOST)),
        (m.Pattern(m.TOPIC, "x", m.PT_PREFIXED), _entry(m.WRITE, host="10.9.9.9")),
    )
    assert _ok(index, m.READ, "anything")
    assert _ok(index, m.WRITE, "pay-1")
    assert not _ok(index, m.WRITE, "pay")
    assert not _ok(index, m.WRITE, "x1")  # another host
    # The decision memo is dropped when an ACL changes.
    index.put(m.Pattern(m.TOPIC, "*"), frozenset(), -1)
    assert not _ok(index, m.READ, "anything")


def test_filters_match_like_resource_pattern_filter() -> None:
    literal, prefixed, wildcard = (
        m.Pattern(m.TOPIC, "pay-1"),
        m.Pattern(m.TOPIC, "pay-", m.PT_PREFIXED),
        m.Pattern(m.TOPIC, "*"),
    )

    def flt(name: str | None, pattern_type: int) -> m.BindingFilter:
        return m.BindingFilter(m.TOPIC, name, pattern_type, None, None, m.OP_ANY, m.PERM_ANY)

    match = flt("pay-1", m.PT_MATCH)
    assert all(match.matches_pattern(p) for p in (literal, prefixed, wildcard))
    assert not match.matches_pattern(m.Pattern(m.TOPIC, "pay-2"))
    anyp = flt("pay-", m.PT_ANY)
    assert anyp.matches_pattern(prefixed) and not anyp.matches_pattern(literal)
    assert flt(None, m.PT_LITERAL).matches_pattern(wildcard)
    assert not flt(None, m.PT_LITERAL).matches_pattern(prefixed)
    assert anyp.matches_at_most_one() and not match.matches_at_most_one()


def test_describe_order_is_kafkas_resource_ordering() -> None:
    index = _index(
        (m.Pattern(m.GROUP, "g"), _entry(m.READ)),
        (m.Pattern(m.TOPIC, "b"), _entry(m.READ)),
        (m.Pattern(m.TOPIC, "a"), _entry(m.READ)),
        (m.Pattern(m.TOPIC, "a", m.PT_PREFIXED), _entry(m.READ)),
    )
    everything = m.BindingFilter(m.RT_ANY, None, m.PT_ANY, None, None, m.OP_ANY, m.PERM_ANY)
    # Resource type, then pattern type, then name in reverse.
    assert [(b.pattern.resource_type, b.pattern.name) for b in index.bindings(everything)] == [
        (m.TOPIC, "b"),
        (m.TOPIC, "a"),
        (m.TOPIC, "a"),
        (m.GROUP, "g"),
    ]


def test_super_users_parse() -> None:
    assert m.parse_super_users(" User:a ; User:b;") == frozenset({"User:a", "User:b"})
    with pytest.raises(ValueError, match="principalType:principalName"):
        m.parse_super_users("bob")
