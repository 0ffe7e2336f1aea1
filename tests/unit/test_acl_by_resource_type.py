"""AclAuthorizer.authorizeByResourceType as pure code (zkbroker.broker.rules.acl_matching), and the
--authorizer option."""

from __future__ import annotations

from zkbroker.broker.cli.main import build_parser, settings_from_args
from zkbroker.broker.rules import acl_matching as m

ALICE, HOST = "User:alice", "10.0.0.1"


def _index(*acls: tuple[str, int, str, int, int]) -> m.AclIndex:
    """(name, pattern type, principal, operation, permission) on topics."""
    index = m.AclIndex()
    grouped: dict[m.Pattern, set[m.Entry]] = {}
    for name, pattern_type, principal, op, perm in acls:
        pattern = m.Pattern(m.TOPIC, name, pattern_type)
        grouped.setdefault(pattern, set()).add(m.Entry(principal, "*", op, perm))
    for pattern, entries in grouped.items():
        index.put(pattern, frozenset(entries), 0)
    return index


def _by_type(index: m.AclIndex, config: m.AuthorizerConfig | None = None) -> bool:
    return m.authorize_by_resource_type(
        index, config or m.AuthorizerConfig(), ALICE, HOST, m.WRITE, m.TOPIC
    )


def test_no_acls_denies_unless_everyone_allowed_or_super_user() -> None:
    assert not _by_type(m.AclIndex())
    assert _by_type(m.AclIndex(), m.AuthorizerConfig(allow_if_no_acls=True))
    assert _by_type(m.AclIndex(), m.AuthorizerConfig(super_users=frozenset({ALICE})))


def test_an_allow_on_any_topic_allows() -> None:
    assert _by_type(_index(("orders", m.PT_LITERAL, ALICE, m.WRITE, m.ALLOW)))
    assert _by_type(_index(("ord", m.PT_PREFIXED, "User:*", m.ALL, m.ALLOW)))
    # Another operation, another principal: no implication, no match.
    assert not _by_type(_index(("orders", m.PT_LITERAL, ALICE, m.READ, m.ALLOW)))
    assert not _by_type(_index(("orders", m.PT_LITERAL, "User:bob", m.WRITE, m.ALLOW)))


def test_denies_dominate_allows() -> None:
    # The literal allow is denied by the same literal and by a covering prefix.
    assert not _by_type(
        _index(
            ("orders", m.PT_LITERAL, ALICE, m.WRITE, m.ALLOW),
            ("orders", m.PT_LITERAL, ALICE, m.WRITE, m.DENY),
        )
    )
    assert not _by_type(
        _index(
            ("orders", m.PT_LITERAL, ALICE, m.WRITE, m.ALLOW),
            ("ord", m.PT_PREFIXED, ALICE, m.WRITE, m.DENY),
        )
    )
    # A deny on another name leaves the allow standing.
    assert _by_type(
        _index(
            ("orders", m.PT_LITERAL, ALICE, m.WRITE, m.ALLOW),
            ("other", m.PT_LITERAL, ALICE, m.WRITE, m.DENY),
        )
    )
    # A literal deny on * refuses even with allow.everyone.if.no.acl.found.
    everyone = m.AuthorizerConfig(allow_if_no_acls=True)
    assert not _by_type(_index(("*", m.PT_LITERAL, ALICE, m.ALL, m.DENY)), everyone)
    # A literal allow on * wins over other denies.
    assert _by_type(
        _index(
            ("*", m.PT_LITERAL, ALICE, m.WRITE, m.ALLOW),
            ("o", m.PT_PREFIXED, ALICE, m.WRITE, m.DENY),
        )
    )


def test_authorizer_option_sets_the_class_and_broker_config_wins() -> None:
    args = build_parser().parse_args(["run", "--authorizer"])
    configs = dict(settings_from_args(args).broker_configs)
    assert configs["authorizer.class.name"] == "kafka.security.authorizer.AclAuthorizer"
    args = build_parser().parse_args(["run"])
    assert "authorizer.class.name" not in dict(settings_from_args(args).broker_configs)
