"""The authorizer's audit lines (AclAuthorizer.logAuditMessage and its debug lines, 3.9): what
each decision logs, at which level, and when the log flags and levels keep it quiet."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, cast

import pytest

from tests.log_events import capture_events
from zkbroker.broker.rules import acl_matching as m
from zkbroker.broker.rules.broker_loggers import BrokerLoggers
from zkbroker.broker.security.authorizer import AUDIT_LOG, AUDIT_LOGGER, AclAuthorizer, Audit
from zkbroker.handlers.support import authorization as auth

ALICE, BOB, ADMIN = "User:alice", "User:bob", "User:admin"
LOGGED = Audit("METADATA", allowed=True, denied=True)


def _authorizer(allow_if_no_acls: bool = False) -> AclAuthorizer:
    authorizer = AclAuthorizer(
        cast(Any, None),
        m.AuthorizerConfig(frozenset({ADMIN}), allow_if_no_acls),
        broker_id=0,
    )
    authorizer.index.put(
        m.Pattern(m.TOPIC, "orders"),
        frozenset(
            {
                m.Entry(ALICE, "*", m.READ, m.ALLOW),
                m.Entry(BOB, "10.0.0.1", m.ALL, m.DENY),
            }
        ),
        0,
    )
    return authorizer


def _audits(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in logs if e["event"] == "authorizer.audit"]


def test_a_denial_is_logged_at_info_with_kafkas_parts() -> None:
    authorizer = _authorizer()
    with capture_events() as logs:
        assert not authorizer.decide(BOB, "10.0.0.1", m.DESCRIBE, m.TOPIC, "orders", LOGGED, 3)
    [line] = _audits(logs)
    assert line == {
        "event": "authorizer.audit",
        "log_level": "info",
        "broker_id": 0,
        "principal": BOB,
        "result": "Denied",
        "operation": "Describe",
        "host": "10.0.0.1",
        "resource": "Topic:LITERAL:orders",
        "request": "METADATA",
        "resource_ref_count": 3,
        "reason": "deny_acl",
        "acl": "User:bob has DENY permission for operations: ALL from hosts: 10.0.0.1",
    }


def test_an_allowed_decision_is_logged_at_debug_with_the_acl_that_allowed_it() -> None:
    authorizer = _authorizer()
    with capture_events() as logs:
        # READ implies DESCRIBE: the READ entry is the one that allows it.
        assert authorizer.decide(ALICE, "1.2.3.4", m.DESCRIBE, m.TOPIC, "orders", LOGGED)
    [line] = _audits(logs)
    assert line["log_level"] == "debug"
    assert line["result"] == "Allowed"
    assert line["reason"] == "allow_acl"
    assert line["acl"] == "User:alice has ALLOW permission for operations: READ from hosts: *"


@pytest.mark.parametrize(
    ("principal", "name", "allow_if_none", "allowed", "reason"),
    [
        (ADMIN, "orders", False, True, "super_user"),
        (ALICE, "payments", False, False, "no_acls_found"),
        (ALICE, "payments", True, True, "no_acls_found"),
        (BOB, "orders", False, False, "no_matching_allow_acl"),  # bob's DENY is for 10.0.0.1
    ],
)
def test_the_reason_names_what_decided(
    principal: str, name: str, allow_if_none: bool, allowed: bool, reason: str
) -> None:
    authorizer = _authorizer(allow_if_none)
    with capture_events() as logs:
        assert authorizer.decide(principal, "1.2.3.4", m.WRITE, m.TOPIC, name, LOGGED) is allowed
    [line] = _audits(logs)
    assert (line["reason"], "acl" in line) == (reason, False)


def test_the_flags_keep_each_result_quiet() -> None:
    authorizer = _authorizer()
    only_allowed = Audit("METADATA", allowed=True, denied=False)
    only_denied = Audit("METADATA", allowed=False, denied=True)
    with capture_events() as logs:
        authorizer.decide(BOB, "10.0.0.1", m.READ, m.TOPIC, "orders", only_allowed)
        authorizer.decide(ALICE, "1.2.3.4", m.READ, m.TOPIC, "orders", only_denied)
    assert _audits(logs) == []


def test_authorize_by_resource_type_is_audited_on_the_none_pattern() -> None:
    authorizer = _authorizer()
    with capture_events() as logs:
        authorizer.audit_by_resource_type(ALICE, "1.2.3.4", m.WRITE, m.TOPIC, False, LOGGED)
        authorizer.audit_by_resource_type(ADMIN, "1.2.3.4", m.WRITE, m.TOPIC, True, LOGGED)
    [line] = _audits(logs)
    assert (line["resource"], line["resource_ref_count"], line["result"]) == (
        "Topic:UNKNOWN:NONE",
        0,
        "Denied",
    )


# ---- which checks are audited (zkbroker.handlers.support.authorization)
# ------------------------------


@pytest.fixture
def audit_logger() -> Iterator[logging.Logger]:
    logger = logging.getLogger(AUDIT_LOG)
    saved = logger.level
    yield logger
    logger.setLevel(saved)


def _ctx(authorizer: AclAuthorizer, loggers: BrokerLoggers, api_key: int = 3) -> Any:
    return SimpleNamespace(
        broker=SimpleNamespace(authorizer=authorizer, broker_loggers=loggers),
        header=SimpleNamespace(api_key=api_key),
        connection=SimpleNamespace(principal=BOB, peer="10.0.0.1:5555"),
    )


def test_levels_decide_which_results_are_audited(audit_logger: logging.Logger) -> None:
    loggers = BrokerLoggers((3, 9))
    ctx = _ctx(_authorizer(), loggers)
    audit_logger.setLevel(logging.DEBUG)
    # Kafka's stock log4j.properties: kafka.authorizer.logger=INFO, denials only.
    assert auth.audit_of(ctx, True, True) == Audit("METADATA", allowed=False, denied=True)
    assert auth.audit_of(ctx, True, False) is None
    loggers.apply(0, AUDIT_LOGGER, "DEBUG")
    assert auth.audit_of(ctx, True, True) == Audit("METADATA", allowed=True, denied=True)
    loggers.apply(0, AUDIT_LOGGER, "WARN")
    assert auth.audit_of(ctx, True, True) is None
    # The process's own logger of that name must let the level through too.
    loggers.apply(0, AUDIT_LOGGER, "DEBUG")
    audit_logger.setLevel(logging.WARNING)
    assert auth.audit_of(ctx, True, True) is None


def test_filter_authorized_counts_references_and_honours_log_if_denied(
    audit_logger: logging.Logger,
) -> None:
    audit_logger.setLevel(logging.INFO)
    ctx = _ctx(_authorizer(), BrokerLoggers((3, 9)), api_key=0)
    with capture_events() as logs:
        allowed = auth.filter_authorized(ctx, m.WRITE, m.TOPIC, ["orders", "orders", "payments"])
        quiet = auth.filter_authorized(ctx, m.WRITE, m.TOPIC, ["orders"], log_if_denied=False)
    assert allowed == set() and quiet == set()
    lines = {(e["resource"], e["resource_ref_count"], e["request"]) for e in _audits(logs)}
    assert lines == {
        ("Topic:LITERAL:orders", 2, "PRODUCE"),
        ("Topic:LITERAL:payments", 1, "PRODUCE"),
    }


def test_a_check_without_audit_costs_no_explanation(audit_logger: logging.Logger) -> None:
    """With the levels hiding every line, `checker` is the bare decision (no wrapper)."""
    audit_logger.setLevel(logging.INFO)
    authorizer = _authorizer()
    ctx = _ctx(authorizer, BrokerLoggers((3, 9)))
    check = auth.checker(ctx, log_if_denied=False)
    assert getattr(check, "func", None) == authorizer.authorize
