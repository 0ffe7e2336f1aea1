"""The API key table (`zkbroker.broker.protocol.api_keys`, generated) against Kafka's specs, and
every per-key table of zkbroker against it: a key missing anywhere fails here.

The specs live beside the repo (``../shared/kafka-message-specs``, tests/shared_data.py);
the spec comparisons take the `kafka_message_specs` fixture. Nothing here re-types the list
of keys: it comes from the specs and from the release history
(`zkbroker.broker.protocol.releases`).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.unit.test_message_definitions import import_path
from zkbroker.broker.protocol import API_SPECS
from zkbroker.broker.protocol.api_keys import API_KEYS, ApiKey
from zkbroker.broker.protocol.releases import (
    API_NAMES,
    API_VERSION_RANGES,
    SERVED_BEYOND_ZK_BROKER,
)
from zkbroker.broker.rules.request_description import RETAINED_SINCE
from zkbroker.broker.security.quotas import EXEMPT_KEYS
from zkbroker.handlers.registry import HANDLERS
from zkbroker.handlers.support import zk_trouble

REPO = Path(__file__).resolve().parents[2]
GENERATOR = REPO / "scripts" / "generate_messages.py"


@pytest.fixture(scope="module")
def requests_by_key(kafka_message_specs: Path) -> dict[int, dict[str, Any]]:
    found: dict[int, dict[str, Any]] = {}
    for path in sorted(kafka_message_specs.glob("*Request.json")):
        text = re.sub(r"(?m)^\s*//.*$", "", path.read_text(encoding="utf-8"))
        raw = json.loads(text)
        if raw.get("type") == "request":
            found[raw["apiKey"]] = raw
    return found


def _generator() -> ModuleType:
    """scripts/generate_messages.py, loaded as test_message_definitions loads it."""
    return import_path(GENERATOR)


def history_keys() -> set[int]:
    return {key for table in API_VERSION_RANGES.values() for key in table}


def test_the_table_has_one_row_per_key_of_the_release_history() -> None:
    assert set(ApiKey) == set(API_KEYS) == history_keys()
    assert list(API_KEYS) == sorted(ApiKey)


def test_every_zk_broker_api_of_the_specs_is_in_the_table(
    requests_by_key: dict[int, dict[str, Any]],
) -> None:
    zk_broker = {key for key, raw in requests_by_key.items() if "zkBroker" in raw["listeners"]}
    assert zk_broker <= set(API_KEYS), sorted(zk_broker - set(API_KEYS))


def test_rows_match_the_specs(requests_by_key: dict[int, dict[str, Any]]) -> None:
    for key, row in API_KEYS.items():
        raw = requests_by_key[key]
        name = raw["name"].removesuffix("Request")
        assert row.name == name == API_NAMES[key] == API_SPECS[key].name
        # Kafka's ApiKeys constant: OffsetForLeaderEpoch -> OFFSET_FOR_LEADER_EPOCH.
        assert key.name == re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()
        assert row.listeners == frozenset(raw["listeners"])
        # The generated classes of the key: named after the spec, in one module with its defs.
        spec = API_SPECS[key]
        assert spec.request_type.__name__ == f"{name}Request"
        assert spec.response_type.__name__ == f"{name}Response"
        assert key == spec.request_type.API_KEY == spec.response_type.API_KEY
        module = sys.modules[spec.request_type.__module__]
        assert module is sys.modules[spec.response_type.__module__]
        assert module.REQUEST is spec.request_def and module.RESPONSE is spec.response_def


def test_served_beyond_zk_broker_comes_from_the_listeners() -> None:
    assert {key for key, row in API_KEYS.items() if "zkBroker" not in row.listeners} == (
        SERVED_BEYOND_ZK_BROKER
    )
    assert {ApiKey.BROKER_REGISTRATION, ApiKey.BROKER_HEARTBEAT} == SERVED_BEYOND_ZK_BROKER


def test_quota_exemptions_are_the_cluster_actions_and_the_pre_authentication_keys() -> None:
    # Kafka's ApiKeys.clusterAction, as the generator copies it.
    cluster = {key for key, row in API_KEYS.items() if row.name in _generator().CLUSTER_ACTIONS}
    before_auth = {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}
    throttled = {ApiKey.UPDATE_FEATURES, ApiKey.ENVELOPE}  # KafkaApis throttles these
    assert throttled <= cluster
    assert (cluster - throttled) | before_auth == EXEMPT_KEYS
    # The set the quota manager has always exempted (no behaviour change).
    assert {ApiKey(k).name for k in EXEMPT_KEYS} == {
        "LEADER_AND_ISR",
        "STOP_REPLICA",
        "UPDATE_METADATA",
        "CONTROLLED_SHUTDOWN",
        "SASL_HANDSHAKE",
        "API_VERSIONS",
        "WRITE_TXN_MARKERS",
        "SASL_AUTHENTICATE",
        "ALTER_PARTITION",
        "BROKER_REGISTRATION",
        "BROKER_HEARTBEAT",
        "ALLOCATE_PRODUCER_IDS",
    }


def test_every_key_has_a_zookeeper_trouble_family() -> None:
    families = {key: entry.zk_trouble_family for key, entry in HANDLERS.items()}
    assert set(families) == set(ApiKey)
    assert all(isinstance(family, zk_trouble.Family) for family in families.values())


def test_zookeeper_trouble_families_are_unchanged() -> None:
    families = {
        family: {k for k, entry in HANDLERS.items() if entry.zk_trouble_family is family}
        for family in zk_trouble.Family
    }
    assert families[zk_trouble.Family.TOPIC_ADMIN] == {19, 20, 37}
    assert families[zk_trouble.Family.CONTROLLER] == {7, 43, 45, 46, 51, 56, 57, 62, 63, 67}
    assert families[zk_trouble.Family.CONFIGS] == {32, 33, 44}
    assert families[zk_trouble.Family.GROUPS] == {8, 9, 10, 15, 16, 42}
    assert families[zk_trouble.Family.METADATA] == {3}
    assert set().union(*families.values()) == set(ApiKey)


def test_every_key_has_one_handler_module() -> None:
    assert set(HANDLERS) == set(ApiKey)
    for key, entry in HANDLERS.items():
        assert entry.api_key is ApiKey(key) and entry.name == API_KEYS[ApiKey(key)].name


# Kafka 3.9's ApiKeys.forwardable flag (its constructor argument in ApiKeys.java).
FORWARDABLE = {
    ApiKey.CREATE_TOPICS,
    ApiKey.DELETE_TOPICS,
    ApiKey.CREATE_ACLS,
    ApiKey.DELETE_ACLS,
    ApiKey.ALTER_CONFIGS,
    ApiKey.CREATE_PARTITIONS,
    ApiKey.CREATE_DELEGATION_TOKEN,
    ApiKey.RENEW_DELEGATION_TOKEN,
    ApiKey.EXPIRE_DELEGATION_TOKEN,
    ApiKey.ELECT_LEADERS,
    ApiKey.INCREMENTAL_ALTER_CONFIGS,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS,
    ApiKey.LIST_PARTITION_REASSIGNMENTS,
    ApiKey.ALTER_CLIENT_QUOTAS,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
    ApiKey.UPDATE_FEATURES,
    ApiKey.ALLOCATE_PRODUCER_IDS,
}


def test_retained_buffers_are_forwardable_keys() -> None:
    for key in RETAINED_SINCE:
        assert ApiKey(key) in FORWARDABLE, ApiKey(key).name


def test_no_bare_api_key_constants_outside_the_table() -> None:
    """`API_VERSIONS_KEY = 18` and the like: every module reads ApiKey instead."""
    pattern = re.compile(r"^[A-Z_]*_KEY(: *Final)? *= *\d+\s*$", re.MULTILINE)
    offenders = []
    for folder in ("broker", "handlers/support"):
        for path in sorted((REPO / folder).rglob("*.py")):
            if path.name == "error_codes.py" or "messages" in path.parts:
                continue
            if pattern.search(path.read_text(encoding="utf-8")):
                offenders.append(str(path.relative_to(REPO)))
    for name in ("registry.py", "context.py"):
        if pattern.search((REPO / "handlers" / name).read_text(encoding="utf-8")):
            offenders.append(f"handlers/{name}")
    assert offenders == []
