"""kafka-python's broker-version inference against what zkbroker advertises per release.

kafka-python (3.0.12) turns the ApiVersions answer into a broker version
(`infer_broker_version_from_api_versions`): it walks probes newest release first, each "release
R if key K advertises version V", and returns the first that matches ((0, 10, 0) when none
does). The inferred version caps the request versions and features kafka-python uses, so each
release zkbroker emulates must be inferred as itself; `_DECIDING_KEY` names each release's probe.

Pure: no network, no ZooKeeper.
"""

from __future__ import annotations

import pytest
from kafka.protocol.broker_version_data import (
    BROKER_API_VERSIONS,
    BrokerVersionData,
    infer_broker_version_from_api_versions,
)

from zkbroker.broker.protocol.releases import (
    API_NAMES,
    RELEASES,
    SERVED_BEYOND_ZK_BROKER,
    advertised_range,
)
from zkbroker.zk_layout.release import Release, release_name

ApiTable = dict[int, tuple[int, int]]


def _full_handler_range(api_key: int) -> tuple[int, int]:
    """A handler that implements the whole spec: 3.9's range (checked against the shared
    3.9 message specs by test_releases)."""
    full = advertised_range((3, 9), api_key)
    assert full is not None, api_key
    return full


def _advertised_table(release: Release) -> ApiTable:
    """What ApiVersions would carry for ``release`` if every key in API_NAMES had a
    handler with the spec's full range: the registry's rule (zkbroker.handlers.registry.api_table),
    the intersection of the handler's range and the release's range, keys the release
    lacks left out."""
    table: ApiTable = {}
    for api_key in API_NAMES:
        released = advertised_range(release, api_key)
        if released is None:
            continue
        handler_lo, handler_hi = _full_handler_range(api_key)
        lo, hi = max(released[0], handler_lo), min(released[1], handler_hi)
        if lo <= hi:
            table[api_key] = (lo, hi)
    return table


def _infer(table: ApiTable) -> tuple[int, ...]:
    """kafka-python's inference, through the same entry point its connection uses."""
    version = BrokerVersionData(api_versions=table).broker_version
    assert version == infer_broker_version_from_api_versions(table)
    assert isinstance(version, tuple)
    return version


def _kafka_python_name(release: Release) -> tuple[int, ...]:
    """kafka-python's name for a release: 0.10.x keep three numbers, 0.11 is (0, 11)."""
    return (0, 11) if release == (0, 11, 0) else release


# What kafka-python infers from zkbroker's table, where it is not the release itself: since
# zkbroker serves LeaderAndIsr (v7 tells 3.4 from 3.2), AddPartitionsToTxn (v4: 3.6),
# DescribeAcls (v2: 2.5, v3: 3.3) and DescribeClientQuotas (v0: 2.6), nowhere.
_INFERRED_LOWER: dict[Release, tuple[int, ...]] = {}

# The one key whose absence changes the inference, per release (found by dropping each
# key in turn): the keys zkbroker must serve, at the release's top version, for
# kafka-python to infer what it infers. 0.10.0 is kafka-python's fallback: no key decides.
_DECIDING_KEY: dict[Release, int | None] = {
    (0, 10, 0): None,
    (0, 10, 1): 3,  # Metadata v2
    (0, 10, 2): 9,  # OffsetFetch v2
    (0, 11, 0): 3,  # Metadata v4
    (1, 0): 3,  # Metadata v5
    (1, 1): 1,  # Fetch v7
    (2, 0): 1,  # Fetch v8
    (2, 1): 1,  # Fetch v10
    (2, 2): 2,  # ListOffsets v5
    (2, 3): 1,  # Fetch v11
    (2, 4): 0,  # Produce v8
    (2, 5): 29,  # DescribeAcls v2
    (2, 6): 48,  # DescribeClientQuotas v0
    (2, 7): 1,  # Fetch v12
    (2, 8): 0,  # Produce v9
    (3, 0): 2,  # ListOffsets v7
    (3, 1): 1,  # Fetch v13
    (3, 2): 11,  # JoinGroup v9
    (3, 3): 29,  # DescribeAcls v3
    (3, 4): 4,  # LeaderAndIsr v7
    (3, 5): 1,  # Fetch v15
    (3, 6): 24,  # AddPartitionsToTxn v4
    (3, 7): 1,  # Fetch v16
    (3, 8): 0,  # Produce v11
    (3, 9): 1,  # Fetch v17
}


def test_expectations_cover_every_release() -> None:
    assert set(_DECIDING_KEY) == set(RELEASES)
    assert set(_INFERRED_LOWER) <= set(RELEASES)


def test_full_range_handlers_advertise_exactly_the_release_ranges() -> None:
    for release in RELEASES:
        expected = {k: r for k in API_NAMES if (r := advertised_range(release, k)) is not None}
        assert _advertised_table(release) == expected, release_name(release)


@pytest.mark.parametrize("release", RELEASES, ids=release_name)
def test_kafka_python_infers_the_release(release: Release) -> None:
    expected = _INFERRED_LOWER.get(release, _kafka_python_name(release))
    assert _infer(_advertised_table(release)) == expected


@pytest.mark.parametrize("release", RELEASES, ids=release_name)
def test_which_key_decides_the_inference(release: Release) -> None:
    table = _advertised_table(release)
    inferred = _infer(table)
    deciding = {k for k in table if _infer({j: r for j, r in table.items() if j != k}) != inferred}
    expected = _DECIDING_KEY[release]
    assert deciding == (set() if expected is None else {expected}), {API_NAMES[k] for k in deciding}


@pytest.mark.parametrize("release", RELEASES, ids=release_name)
def test_every_key_kafka_python_recorded_is_served(release: Release) -> None:
    # kafka-python's recorded answer of a real broker of the release: every key in it is in
    # zkbroker's table (so every probe kafka-python makes can match).
    recorded = BROKER_API_VERSIONS[_kafka_python_name(release)]
    assert set(recorded) <= set(API_NAMES)


@pytest.mark.parametrize("release", RELEASES, ids=release_name)
def test_ranges_match_kafka_python_recorded_brokers(release: Release) -> None:
    # An independent cross-check: kafka-python keeps, per release, the ApiVersions answer of
    # a real broker (its ZooKeeper-only keys such as LeaderAndIsr show those were ZK
    # brokers). Every covered key agrees, except the KIP-631 leases zkbroker adds.
    recorded = BROKER_API_VERSIONS[_kafka_python_name(release)]
    for api_key in API_NAMES:
        if api_key in SERVED_BEYOND_ZK_BROKER:
            assert api_key not in recorded
            continue
        assert advertised_range(release, api_key) == recorded.get(api_key), (
            f"{API_NAMES[api_key]} ({api_key}) in {release_name(release)}"
        )
