"""Our own one-line documentation for Kafka's topic and broker configs, looked up by name as
DescribeConfigs v3+ answers with `include_documentation` (Kafka's behaviour: §4.3).

`BROKER_CONFIG_DOCS` gathers the broker texts of every group (``broker_config_docs_security``,
``broker_config_docs_log``, ``broker_config_docs_coordinators``, ``broker_config_docs_server``):
one per broker config of `KafkaConfig` 2.8.0 or 3.9 and per dynamic-only throttle rate.
`broker_config_documentation` also answers `listener.name.<l>.[<mechanism>.]<key>` with the
base key's text plus a note; `topic_config_documentation` answers from ``topic_config_docs``.

Not here: the texts themselves (the modules above), defaults, types, ranges (`config_catalog`),
which keys exist in which release (callers decide), per-entity configs of users, clients, IPs
and SCRAM credentials, HTML markup.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from zkbroker.broker.rules.broker_config_docs_coordinators import COORDINATOR_CONFIG_DOCS
from zkbroker.broker.rules.broker_config_docs_log import LOG_CONFIG_DOCS
from zkbroker.broker.rules.broker_config_docs_security import SECURITY_CONFIG_DOCS
from zkbroker.broker.rules.broker_config_docs_server import SERVER_CONFIG_DOCS
from zkbroker.broker.rules.topic_config_docs import TOPIC_CONFIG_DOCS

BROKER_CONFIG_DOCS: Mapping[str, str] = MappingProxyType(
    dict(
        sorted(
            {
                **SECURITY_CONFIG_DOCS,
                **LOG_CONFIG_DOCS,
                **COORDINATOR_CONFIG_DOCS,
                **SERVER_CONFIG_DOCS,
            }.items()
        )
    )
)
"""Broker config name (no listener prefix) -> our one-line documentation, by name."""

_LISTENER_PREFIX = "listener.name."


def topic_config_documentation(name: str) -> str | None:
    """Our documentation for topic config `name`, or None for a name we do not know."""
    return TOPIC_CONFIG_DOCS.get(name)


def broker_config_documentation(name: str) -> str | None:
    """Our documentation for broker config `name`, or None for a name we do not know.

    A listener-scoped name `listener.name.<listener>.<key>` answers `<key>`'s text followed by a
    note that the value is limited to that listener; the SASL form
    `listener.name.<listener>.<mechanism>.<sasl key>` also names the mechanism.
    """
    doc = BROKER_CONFIG_DOCS.get(name)
    if doc is not None or not name.startswith(_LISTENER_PREFIX):
        return doc
    listener, _, base = name[len(_LISTENER_PREFIX) :].partition(".")
    if not listener or not base:
        return None
    base_doc = BROKER_CONFIG_DOCS.get(base)
    if base_doc is not None:
        return f"{base_doc} This value is set for listener {listener} only."
    mechanism, _, sasl_key = base.partition(".")
    sasl_doc = BROKER_CONFIG_DOCS.get(sasl_key) if sasl_key.startswith("sasl.") else None
    if not mechanism or sasl_doc is None:
        return None
    note = f"This value is set for SASL mechanism {mechanism} on listener {listener} only."
    return f"{sasl_doc} {note}"
