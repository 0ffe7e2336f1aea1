"""Pure quota rules: entity validation and value formatting (ZkAdminManager), describe
matching, Kafka's Rate/throttle math and the quota precedence of DefaultQuotaCallback."""

from __future__ import annotations

import pytest

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.rules.quota_entities import (
    CLIENT_ID,
    USER,
    FilterComponent,
    QuotaEntity,
    QuotaError,
    QuotaOp,
    StoredEntity,
    apply_ops,
    describe,
    entity_target,
    java_double_text,
    user_config_keys,
)
from zkbroker.broker.rules.quota_entities import (
    MATCH_ANY as ANY,
)
from zkbroker.broker.rules.quota_entities import (
    MATCH_EXACT as EXACT,
)
from zkbroker.broker.rules.quota_rates import (
    SampledRate,
    TokenBucket,
    find_quota,
    record_and_throttle_ms,
    token_throttle_ms,
)
from zkbroker.broker.security.quotas import ClientQuotaConfigs, ClientQuotaManager, WindowConfig

R = (3, 9)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1024.0, "1024.0"),
        (50.5, "50.5"),
        (1e7, "1.0E7"),
        (12345678.0, "1.2345678E7"),
        (0.001, "0.001"),
        (0.0001, "1.0E-4"),
        (0.1, "0.1"),
        (1e20, "1.0E20"),
    ],
)
def test_java_double_text(value: float, text: str) -> None:
    assert java_double_text(value) == text


def test_entity_paths_sanitized_and_defaults() -> None:
    both = QuotaEntity.from_pairs([(USER, "a b"), (CLIENT_ID, None)])
    assert entity_target(both, R).path_name == "a%20b/clients/<default>"
    # Kafka's HashMap order of the two type names.
    assert [t for t, _ in both.entries] == ["client-id", "user"]
    assert entity_target(QuotaEntity.from_pairs([(CLIENT_ID, "c*")]), R).path_name == "c%2A"


def test_ops_long_double_remove_and_errors() -> None:
    keys = user_config_keys(R)
    props = apply_ops(
        {"SCRAM-SHA-256": "x", "consumer_byte_rate": "1"},
        [
            QuotaOp("producer_byte_rate", 1000.0000001, False),
            QuotaOp("request_percentage", 25.0, False),
            QuotaOp("consumer_byte_rate", 0, True),
        ],
        keys,
    )
    assert props == {
        "SCRAM-SHA-256": "x",
        "producer_byte_rate": "1000",
        "request_percentage": "25.0",
    }
    with pytest.raises(QuotaError) as e:
        apply_ops({}, [QuotaOp("producer_byte_rate", 0.5, False)], keys)
    assert (e.value.code, e.value.message) == (
        error_codes.INVALID_REQUEST,
        "Configuration producer_byte_rate must be a LONG value",
    )
    with pytest.raises(QuotaError) as e:
        apply_ops({}, [QuotaOp("SCRAM-SHA-512", 1, False)], keys)
    assert (e.value.code, e.value.message) == (error_codes.UNKNOWN_SERVER_ERROR, None)


def test_describe_matching_strict_and_any() -> None:
    stored = [
        StoredEntity(("u",), None, None, {"producer_byte_rate": "1"}),
        StoredEntity(("u",), ("c",), None, {"request_percentage": "2.5"}),
        StoredEntity(None, (None,), None, {"consumer_byte_rate": "3"}),
        StoredEntity(("v",), None, None, {"SCRAM-SHA-256": "x"}),  # no quota key: left out
    ]
    everything = describe([], False, stored, R)
    assert [pairs for pairs, _ in everything] == [
        [(USER, "u")],
        [(CLIENT_ID, "c"), (USER, "u")],
        [(CLIENT_ID, None)],
    ]
    assert describe([], True, stored, R) == []
    any_client = [FilterComponent(CLIENT_ID, ANY, None)]
    assert [p for p, _ in describe(any_client, True, stored, R)] == [[(CLIENT_ID, None)]]
    exact = [FilterComponent(USER, EXACT, "u")]
    assert describe(exact, True, stored, R) == [([(USER, "u")], [("producer_byte_rate", 1.0)])]


def test_rate_throttle_is_kafkas_formula() -> None:
    # 2 samples of 1 s: the window is at least 1 s; 300 bytes at t=0 against 100 B/s is a
    # rate of 300/s, so the throttle is (300 - 100) / 100 * 1000 ms.
    rate = SampledRate(2, 1000)
    assert record_and_throttle_ms(rate, 100, 100, 10_000) == 0
    assert record_and_throttle_ms(rate, 200, 100, 10_000) == 2000
    # Bounded (request quotas) at one window.
    assert record_and_throttle_ms(rate, 0, 100, 10_000, max_ms=1000) == 1000
    # Old samples expire: after the whole window the rate starts again.
    assert record_and_throttle_ms(rate, 50, 100, 20_000) == 0


def test_precedence_and_sharing() -> None:
    entities = {
        "users/<default>": {"producer_byte_rate": 10.0},
        "clients/c": {"producer_byte_rate": 20.0},
        "users/u/clients/<default>": {"producer_byte_rate": 30.0},
    }
    match = find_quota(entities, "producer_byte_rate", "u", "c")
    assert match is not None and (match.bound, match.user_tag, match.client_tag) == (30.0, "u", "c")
    match = find_quota(entities, "producer_byte_rate", "w", "c")
    assert match is not None and (match.bound, match.user_tag, match.client_tag) == (10.0, "w", "")
    assert find_quota(entities, "consumer_byte_rate", "w", "c") is None


def test_manager_applies_produce_quota_to_its_client_only() -> None:
    configs = ClientQuotaConfigs()
    configs.set_entity("clients/slow", {"producer_byte_rate": "1000", "other": "x"})
    manager = ClientQuotaManager(configs, WindowConfig(2, 1))
    slow = [manager.throttle_ms(0, "User:ANONYMOUS", "slow", 5000, 10, 0.0) for _ in range(3)]
    fast = [manager.throttle_ms(0, "User:ANONYMOUS", "fast", 5000, 10, 0.0) for _ in range(3)]
    assert all(t > 0 for t in slow) and fast == [0, 0, 0]
    configs.set_entity("clients/slow", {})
    assert not configs


def test_token_bucket_and_strict_mutation_quota() -> None:
    bucket = TokenBucket(quota=2.0, burst=4.0)
    assert bucket.tokens_at(10_000) == 4.0  # refilled up to the burst
    bucket.record(10, 10_000)
    assert token_throttle_ms(bucket.tokens, 2.0) == 3000  # 6 tokens short at 2/s
    assert bucket.tokens_at(11_000) == -4.0

    configs = ClientQuotaConfigs()
    configs.set_entity("clients/admin", {"controller_mutation_rate": "1"})
    manager = ClientQuotaManager(configs, WindowConfig(), WindowConfig(2, 1))
    strict = manager.mutation_quota(19, 6, "User:ANONYMOUS", "admin")
    # The first mutation may overdraw (the check runs before recording) and, strict, is not
    # throttled (Kafka's StrictControllerMutationQuotaTest); the next is refused and throttled.
    assert strict.record(5) and strict.throttle_time_ms == 0
    assert not strict.record(1) and strict.throttle_time_ms > 0
    permissive = manager.mutation_quota(19, 5, "User:ANONYMOUS", "admin")
    assert permissive.record(1) and permissive.throttle_time_ms > 0
    other = manager.mutation_quota(19, 6, "User:ANONYMOUS", "other")
    assert other.record(100) and other.throttle_time_ms == 0


def test_ip_connection_rate_own_then_default() -> None:
    configs = ClientQuotaConfigs()
    configs.set_entity("ips/<default>", {"connection_creation_rate": "1"})
    configs.set_entity("ips/10.0.0.1", {"connection_creation_rate": "100"})
    manager = ClientQuotaManager(configs, WindowConfig(2, 1))
    assert [manager.connection_throttle_ms("10.0.0.2") > 0 for _ in range(3)] == [
        False,
        True,
        True,
    ]
    assert all(manager.connection_throttle_ms("10.0.0.1") == 0 for _ in range(50))
