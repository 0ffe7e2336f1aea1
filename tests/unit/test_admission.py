"""The pure admission rules (`zkbroker.broker.server.admission`): Kafka's ConnectionQuotas,
IdleExpiryManager, SimpleMemoryPool (non-strict) and the once-per-interval report throttle,
plus the settings checks KafkaConfig.validateValues applies to these configs."""

from __future__ import annotations

import pytest

from zkbroker.broker.server.admission import (
    INT_MAX,
    UNPOOLED_REQUEST_BYTES,
    AdmissionLimits,
    ConnectionQuotas,
    IdleConnections,
    InvalidOverrides,
    ReportThrottle,
    RequestMemoryPool,
    RequestRead,
    idle_close_reason,
    normalize_ip,
    parse_overrides,
)
from zkbroker.broker.settings import Settings


def limits_from(configs: dict[str, str], listener: str = "PLAINTEXT") -> AdmissionLimits:
    return AdmissionLimits.from_config(configs.get, listener, queued_default=100)


def test_defaults_are_kafkas() -> None:
    limits = limits_from({})
    assert limits.max_connections == INT_MAX
    assert limits.max_connections_per_ip == INT_MAX
    assert limits.per_ip_overrides == {}
    assert limits.connections_max_idle_ms == 600_000
    assert limits.queued_max_request_bytes == 100  # the caller's (zkbroker's) default


def test_limits_read_from_config_and_listener_override_narrows() -> None:
    limits = limits_from(
        {
            "max.connections": "50",
            "listener.name.plaintext.max.connections": "20",
            "max.connections.per.ip": "5",
            "max.connections.per.ip.overrides": "127.0.0.1:7, host-a : 0",
            "connections.max.idle.ms": "-1",
            "queued.max.request.bytes": "1000",
        }
    )
    assert limits.max_connections == 20
    assert limits.max_connections_per_ip == 5
    assert limits.per_ip_overrides == {"127.0.0.1": 7, "host-a": 0}
    assert limits.connections_max_idle_ms == -1
    assert limits.queued_max_request_bytes == 1000


def test_invalid_values_keep_defaults_and_are_reported() -> None:
    seen: list[str] = []
    limits = AdmissionLimits.from_config(
        {"max.connections": "many", "max.connections.per.ip.overrides": "nocount"}.get,
        "PLAINTEXT",
        on_invalid=lambda name, why: seen.append(name),
    )
    assert limits.max_connections == INT_MAX and limits.per_ip_overrides == {}
    assert seen == ["max.connections", "max.connections.per.ip.overrides"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("a:1", {"a": 1}),
        (" a : 1 , b:2 ", {"a": 1, "b": 2}),
        ("::1:4", {"::1": 4}),
        ("[::1]:4", {"::1": 4}),
    ],
)
def test_parse_overrides(text: str, expected: dict[str, int]) -> None:
    assert parse_overrides(text) == expected


@pytest.mark.parametrize("text", ["a", "a:x", "a:99999999999"])
def test_parse_overrides_refuses(text: str) -> None:
    with pytest.raises(InvalidOverrides):
        parse_overrides(text)


def test_normalize_ip() -> None:
    assert normalize_ip("::ffff:127.0.0.1") == "127.0.0.1"
    assert normalize_ip("0:0:0:0:0:0:0:1") == "::1"
    assert normalize_ip("fe80::1%eth0") == "fe80::1"
    assert normalize_ip("not-an-ip") == "not-an-ip"


def test_per_ip_limit_refuses_the_connection_over_it_and_counts_nothing() -> None:
    quotas = ConnectionQuotas(AdmissionLimits(max_connections_per_ip=2))
    assert quotas.admit("10.0.0.1") is None
    assert quotas.admit("10.0.0.1") is None
    refused = quotas.admit("10.0.0.1")
    assert refused is not None and refused.limit == 2
    assert refused.message == (
        "Rejected connection from 10.0.0.1, address already has the configured maximum of "
        "2 connections."
    )
    assert quotas.admit("10.0.0.2") is None  # another address has its own count
    assert (quotas.total, quotas.count("10.0.0.1")) == (3, 2)
    quotas.release("10.0.0.1")
    assert quotas.admit("10.0.0.1") is None
    quotas.release("10.0.0.9")  # never counted: nothing happens
    assert quotas.total == 3


def test_overrides_beat_the_default_per_ip_limit() -> None:
    limits = AdmissionLimits(max_connections_per_ip=0, per_ip_overrides={"::ffff:10.0.0.1": 1})
    quotas = ConnectionQuotas(limits)
    assert quotas.admit("10.0.0.1") is None
    assert quotas.admit("10.0.0.1") is not None
    assert quotas.admit("10.0.0.2") is not None  # 0: no connection at all
    quotas.update(limits, {"10.0.0.2": 3})  # resolved by the listener
    assert quotas.admit("10.0.0.2") is None
    assert quotas.limit_for("10.0.0.1") == 0


def test_max_connections_is_a_slot_check_and_a_lowered_limit_leaves_excess() -> None:
    quotas = ConnectionQuotas(AdmissionLimits(max_connections=2))
    for ip in ("a", "b"):
        assert quotas.slot_available()
        assert quotas.admit(ip) is None
    assert not quotas.slot_available()
    assert quotas.excess() == 0
    quotas.update(AdmissionLimits(max_connections=1))
    assert quotas.excess() == 1
    quotas.update(AdmissionLimits(max_connections=5))
    assert quotas.slot_available() and quotas.excess() == 0


def test_idle_connections_expire_oldest_first_and_only_past_the_limit() -> None:
    idle = IdleConnections(1000)
    idle.touch("a", 0.0)
    idle.touch("b", 0.5)
    idle.touch("c", 0.9)
    idle.touch("a", 1.0)  # activity moves it to the back
    assert idle.oldest() == "b"
    assert list(idle.expired(1.4)) == []
    assert list(idle.expired(1.95)) == ["b", "c"]
    assert len(idle) == 1
    idle.remove("a")
    idle.remove("a")
    assert idle.oldest() is None


def test_negative_idle_limit_disables_expiry() -> None:
    idle = IdleConnections(-1)
    idle.touch("a", 0.0)
    assert list(idle.expired(1e9)) == []


def test_memory_pool_is_non_strict_and_unbounded_when_not_positive() -> None:
    pool = RequestMemoryPool(100)
    assert pool.try_allocate(80)
    assert pool.try_allocate(80)  # 20 left: any memory left allows one more
    assert pool.available == -60
    assert not pool.try_allocate(1)
    pool.release(80)
    assert pool.try_allocate(10)
    pool.release(80)
    pool.release(10)
    assert pool.available == 100  # never more than the capacity
    pool.resize(50)
    assert pool.available == 50
    unbounded = RequestMemoryPool(-1)
    assert all(unbounded.try_allocate(10**9) for _ in range(3))


def test_small_requests_are_outside_the_pool() -> None:
    small, large = UNPOOLED_REQUEST_BYTES, UNPOOLED_REQUEST_BYTES + 1
    pool = RequestMemoryPool(200_000, UNPOOLED_REQUEST_BYTES)
    assert not pool.pooled(small) and pool.pooled(large)
    assert pool.try_allocate(150_000) and pool.try_allocate(150_000)  # announced sizes
    assert pool.available == -100_000
    assert not pool.try_allocate(large)  # a large request waits for a release ...
    assert all(pool.try_allocate(small) for _ in range(1000))  # ... a small one never does
    pool.release(small)  # and is not counted either way
    assert pool.available == -100_000
    pool.release(150_000)
    assert pool.try_allocate(large)
    assert not RequestMemoryPool(-1, UNPOOLED_REQUEST_BYTES).pooled(10**9)


def test_idle_close_reason_names_the_setting_and_what_the_request_got() -> None:
    setting = "connections.max.idle.ms (500 ms)"
    assert idle_close_reason(None, 500) == f"idle for more than {setting}"
    assert idle_close_reason(RequestRead(), 500) == f"idle for more than {setting}"
    assert idle_close_reason(RequestRead(size=100), 500) == (
        f"unfinished request of 100 bytes: nothing more received for more than {setting}"
    )
    assert idle_close_reason(RequestRead(size=150_000, received=0), 500) == (
        f"unfinished request: 0 of 150000 bytes received, then nothing more for more than {setting}"
    )
    waiting = RequestRead(size=150_000, waiting_for_pool=True)
    assert idle_close_reason(waiting, 500) == (
        f"a 150000-byte request waited unread for queued.max.request.bytes for more than {setting}"
    )


def test_report_throttle_reports_once_per_interval_with_the_count() -> None:
    throttle = ReportThrottle(10.0)
    assert throttle.failed(0.0)
    assert not any(throttle.failed(t) for t in (1.0, 2.0, 9.9))
    assert throttle.failed(10.0)
    assert throttle.take_suppressed() == 3
    assert throttle.take_suppressed() == 0
    assert not throttle.failed(10.5)  # still within the interval of the last report


def test_settings_apply_kafkas_start_up_rules() -> None:
    assert Settings().queued_max_request_bytes == Settings().max_request_bytes
    configs = Settings().static_broker_configs(0, 9092, "zk")
    assert configs["queued.max.request.bytes"] == "104857600"
    own = Settings(broker_configs=(("queued.max.request.bytes", "-1"),))
    assert own.queued_max_request_bytes == -1
    assert own.static_broker_configs(0, 9092, "zk")["queued.max.request.bytes"] == "-1"
    with pytest.raises(ValueError, match=r"must be larger or equal to socket\.request\.max\.bytes"):
        Settings(broker_configs=(("queued.max.request.bytes", "1000"),))
    with pytest.raises(ValueError, match=r"should always be less than connections\.max\.idle\.ms"):
        Settings(broker_configs=(("connections.max.idle.ms", "100"),))
    with pytest.raises(ValueError, match="can be set to zero only if"):
        Settings(broker_configs=(("max.connections.per.ip", "0"),))
    with pytest.raises(ValueError, match="Error parsing configuration property"):
        Settings(broker_configs=(("max.connections.per.ip.overrides", "nocount"),))
    Settings(
        broker_configs=(
            ("max.connections.per.ip", "0"),
            ("max.connections.per.ip.overrides", "127.0.0.1:5"),
            ("connections.max.idle.ms", "-1"),
        )
    )
    # Kafka 0.11 had no queued.max.request.bytes: nothing shown, zkbroker's cap still applies.
    old = Settings(kafka_version=(0, 11, 0))
    assert "queued.max.request.bytes" not in old.static_broker_configs(0, 9092, "zk")
