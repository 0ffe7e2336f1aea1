"""Tests for zkbroker.broker.protocol.releases (pure: no network, no ZooKeeper)."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from zkbroker.broker.protocol.releases import (
    API_NAMES,
    API_VERSION_RANGES,
    DEFAULT_RELEASE,
    RELEASES,
    SERVED_BEYOND_ZK_BROKER,
    advertised_range,
    parse_release,
)
from zkbroker.zk_layout.release import Release, release_name

# --- parse_release / release_name ------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2.8", (2, 8)),
        ("2.8.0", (2, 8)),
        ("2.8.2", (2, 8)),
        ("0.10.1", (0, 10, 1)),
        ("0.10.1.1", (0, 10, 1)),
        ("0.10.0", (0, 10, 0)),
        ("0.11.0.3", (0, 11, 0)),
        ("1.0", (1, 0)),
        ("1.1.1", (1, 1)),
        ("3.9.0", (3, 9)),
        ("3.9", (3, 9)),
    ],
)
def test_parse_release_accepts(text: str, expected: Release) -> None:
    assert parse_release(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "2",
        "0.10",
        "0.9.0",  # older than anything supported
        "0.12.0",
        "2.9",
        "4.0",
        "4.0.0",
        "2.8.0.1",  # one number too many for a 1.x+ release
        "0.10.1.1.1",
        "2.8.x",
        "v2.8",
        "2.8.0-rc1",
        "2.08",
        " 2.8",
        "2.8 ",
        "2..8",
        "2.8.",
        "3.10",
    ],
)
def test_parse_release_rejects(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_release(text)
    message = str(info.value)
    # The message lists the known releases.
    assert "0.10.0" in message
    assert "2.8" in message
    assert "3.9" in message


def test_release_name_round_trips() -> None:
    assert release_name((2, 8)) == "2.8"
    assert release_name((0, 10, 1)) == "0.10.1"
    for r in RELEASES:
        assert parse_release(release_name(r)) == r


def test_release_list() -> None:
    assert list(RELEASES) == sorted(RELEASES)
    assert len(set(RELEASES)) == len(RELEASES)
    assert RELEASES[0] == (0, 10, 0)
    assert RELEASES[-1] == (3, 9)
    assert DEFAULT_RELEASE == (3, 9)  # the last release with ZooKeeper mode
    assert DEFAULT_RELEASE in RELEASES
    assert set(API_VERSION_RANGES) == set(RELEASES)


# --- table shape and monotonicity -----------------------------------------


def test_only_covered_keys_and_min_zero() -> None:
    for r in RELEASES:
        for api_key, (lo, hi) in API_VERSION_RANGES[r].items():
            assert api_key in API_NAMES, (r, api_key)
            # ControlledShutdown's V0 slot is null in 0.10-0.11's Protocol.java.
            assert lo == (1 if api_key == 7 and r < (1, 0) else 0), (r, api_key)
            assert hi >= lo, (r, api_key)


def test_maxima_never_decrease_and_keys_never_disappear() -> None:
    for older, newer in pairwise(RELEASES):
        old_table = API_VERSION_RANGES[older]
        new_table = API_VERSION_RANGES[newer]
        for api_key, (_, old_max) in old_table.items():
            assert api_key in new_table, (
                f"{API_NAMES[api_key]} ({api_key}) disappears in {release_name(newer)}"
            )
            assert new_table[api_key][1] >= old_max, (
                f"{API_NAMES[api_key]} max drops from {old_max} in {release_name(older)}"
                f" to {new_table[api_key][1]} in {release_name(newer)}"
            )


def test_every_covered_key_is_advertised_by_3_9() -> None:
    assert set(API_VERSION_RANGES[(3, 9)]) == set(API_NAMES)


def test_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        API_VERSION_RANGES[(2, 8)][3] = (0, 99)  # type: ignore[index]


# --- advertised_range -------------------------------------------------------


def test_advertised_range() -> None:
    assert advertised_range((2, 8), 3) == (0, 11)
    assert advertised_range((0, 10, 0), 19) is None
    assert advertised_range((2, 8), 0) == (0, 9)  # Produce
    assert advertised_range((0, 10, 2), 21) is None  # DeleteRecords: new in 0.11
    assert advertised_range((2, 8), 24) == (0, 3)  # AddPartitionsToTxn
    assert advertised_range((3, 5), 24) == (0, 3)  # v4 unstable in 3.5
    assert advertised_range((3, 9), 24) == (0, 5)
    assert advertised_range((2, 8), 65) is None  # DescribeTransactions: 3.0+
    assert advertised_range((3, 9), 66) == (0, 1)
    with pytest.raises(ValueError):
        advertised_range((4, 0), 3)


# --- spot checks read from Kafka's source at the release tags --------------


@pytest.mark.parametrize(
    ("release", "api_key", "expected"),
    [
        # 0.10.0.0 Protocol.java
        ((0, 10, 0), 3, (0, 1)),
        ((0, 10, 0), 18, (0, 0)),
        ((0, 10, 0), 8, (0, 2)),
        ((0, 10, 0), 9, (0, 1)),
        ((0, 10, 0), 10, (0, 0)),
        # 0.10.1.0 / 0.10.2.0 Protocol.java
        ((0, 10, 1), 3, (0, 2)),
        ((0, 10, 1), 19, (0, 0)),
        ((0, 10, 2), 19, (0, 1)),
        ((0, 10, 2), 9, (0, 2)),
        # 0.11.0.0 Protocol.java
        ((0, 11, 0), 3, (0, 4)),
        ((0, 11, 0), 32, (0, 0)),
        ((0, 11, 0), 10, (0, 1)),
        # 1.x / 2.0 request classes' schemaVersions()
        ((1, 0), 3, (0, 5)),
        ((1, 0), 37, (0, 0)),
        ((1, 1), 32, (0, 1)),
        ((1, 1), 42, (0, 0)),
        ((2, 0), 18, (0, 2)),
        ((2, 1), 8, (0, 6)),
        ((2, 2), 43, (0, 0)),
        ((2, 3), 44, (0, 0)),
        # JSON message specs
        ((2, 4), 3, (0, 9)),
        ((2, 4), 45, (0, 0)),
        ((2, 6), 16, (0, 4)),
        ((2, 7), 19, (0, 6)),
        ((2, 8), 3, (0, 11)),
        ((2, 8), 19, (0, 7)),
        ((2, 8), 20, (0, 6)),
        ((2, 8), 60, (0, 0)),
        ((2, 8), 10, (0, 3)),
        ((2, 8), 9, (0, 7)),
        ((2, 8), 8, (0, 8)),
        ((3, 0), 10, (0, 4)),
        ((3, 0), 9, (0, 8)),
        ((3, 1), 3, (0, 12)),
        ((3, 6), 8, (0, 8)),  # v9 is latestVersionUnstable in 3.6
        ((3, 7), 8, (0, 9)),
        ((3, 7), 60, (0, 1)),
        ((3, 8), 16, (0, 5)),
        ((3, 8), 10, (0, 5)),
        ((3, 9), 18, (0, 4)),
        ((3, 9), 10, (0, 6)),
        ((2, 8), 62, (0, 0)),  # KIP-631: served on every listener (see releases.py)
        ((3, 4), 62, (0, 1)),
        ((3, 6), 63, (0, 0)),
        ((3, 7), 62, (0, 3)),
        ((3, 7), 63, (0, 1)),
        ((3, 9), 62, (0, 4)),
        # Data plane and group membership. 0.x: Protocol.java.
        ((0, 10, 0), 0, (0, 2)),
        ((0, 10, 0), 1, (0, 2)),
        ((0, 10, 0), 2, (0, 0)),
        ((0, 10, 0), 11, (0, 0)),
        ((0, 10, 1), 1, (0, 3)),
        ((0, 10, 1), 2, (0, 1)),
        ((0, 10, 1), 11, (0, 1)),
        ((0, 11, 0), 0, (0, 3)),
        ((0, 11, 0), 1, (0, 5)),
        ((0, 11, 0), 2, (0, 2)),
        ((0, 11, 0), 14, (0, 1)),
        ((0, 11, 0), 21, (0, 0)),
        ((0, 11, 0), 22, (0, 0)),
        ((0, 11, 0), 23, (0, 0)),
        # 1.0 - 2.7: request classes' schemaVersions() or the generated JSON's validVersions.
        ((1, 0), 0, (0, 5)),
        ((1, 0), 1, (0, 6)),
        ((1, 0), 34, (0, 0)),
        ((1, 0), 35, (0, 0)),
        ((1, 1), 1, (0, 7)),
        ((2, 0), 1, (0, 8)),
        ((2, 0), 23, (0, 1)),
        ((2, 1), 0, (0, 7)),
        ((2, 1), 1, (0, 10)),
        ((2, 1), 2, (0, 4)),
        ((2, 2), 2, (0, 5)),
        ((2, 2), 11, (0, 4)),
        ((2, 2), 13, (0, 2)),  # generated LeaveGroupRequestData from 2.2
        ((2, 3), 1, (0, 11)),
        ((2, 3), 12, (0, 3)),
        ((2, 3), 23, (0, 3)),
        ((2, 4), 0, (0, 8)),
        ((2, 4), 13, (0, 4)),
        ((2, 4), 22, (0, 2)),
        ((2, 4), 47, (0, 0)),
        ((2, 5), 11, (0, 7)),
        ((2, 5), 14, (0, 5)),
        ((2, 5), 22, (0, 3)),
        ((2, 6), 21, (0, 2)),
        ((2, 6), 35, (0, 2)),
        ((2, 7), 1, (0, 12)),
        ((2, 7), 2, (0, 5)),
        ((2, 7), 22, (0, 4)),
        ((2, 7), 34, (0, 1)),
        # 2.8 - 3.9: zkBroker JSON.
        ((2, 8), 0, (0, 9)),
        ((2, 8), 1, (0, 12)),
        ((2, 8), 2, (0, 6)),
        ((2, 8), 23, (0, 4)),
        ((2, 8), 34, (0, 2)),
        ((3, 0), 2, (0, 7)),
        ((3, 1), 1, (0, 13)),
        ((3, 2), 11, (0, 9)),
        ((3, 2), 13, (0, 5)),
        ((3, 2), 35, (0, 3)),
        ((3, 3), 35, (0, 4)),
        ((3, 4), 1, (0, 13)),
        ((3, 5), 1, (0, 15)),
        ((3, 5), 2, (0, 8)),
        ((3, 6), 0, (0, 9)),
        ((3, 7), 0, (0, 10)),
        ((3, 7), 1, (0, 16)),
        ((3, 8), 0, (0, 11)),
        ((3, 8), 2, (0, 8)),
        ((3, 8), 22, (0, 5)),
        ((3, 9), 1, (0, 17)),  # KIP-853 v17: stable, zkBroker, not gated by the IBP
        ((3, 9), 2, (0, 9)),
        # UpdateFeatures (KIP-584): v0 from 2.7 (no "listeners" in 2.7's JSON), v1 from 3.3.
        ((2, 7), 57, (0, 0)),
        ((3, 2), 57, (0, 0)),
        ((3, 3), 57, (0, 1)),
        ((3, 9), 57, (0, 1)),
        ((0, 10, 0), 7, (1, 1)),  # ControlledShutdown: {null, V1}
        ((0, 11, 0), 7, (1, 1)),
        ((1, 0), 7, (0, 1)),
        ((2, 2), 7, (0, 2)),  # KIP-380 broker epoch
        ((2, 4), 7, (0, 3)),
        ((3, 9), 7, (0, 3)),
        ((2, 7), 56, (0, 0)),  # AlterIsr (KIP-497)
        ((3, 2), 56, (0, 1)),  # AlterPartition (KIP-704)
        ((3, 4), 56, (0, 2)),  # KIP-841
        ((3, 5), 56, (0, 3)),  # KIP-903
        ((3, 0), 67, (0, 0)),  # AllocateProducerIds (KIP-730) from 3.0, v0 only
        ((3, 9), 67, (0, 0)),
        ((1, 1), 38, (0, 0)),  # delegation tokens (KIP-48)
        ((2, 0), 41, (0, 1)),
        ((2, 4), 38, (0, 2)),  # CreateDelegationToken flexible one release before the others
        ((2, 4), 39, (0, 1)),
        ((2, 5), 40, (0, 2)),
        ((3, 3), 38, (0, 3)),  # KIP-373
        ((3, 3), 41, (0, 3)),
        ((3, 9), 39, (0, 2)),
        ((0, 10, 0), 4, (0, 0)),  # LeaderAndIsr
        ((1, 0), 4, (0, 1)),
        ((2, 2), 4, (0, 2)),
        ((2, 4), 4, (0, 4)),
        ((2, 8), 4, (0, 5)),
        ((3, 2), 4, (0, 6)),
        ((3, 4), 4, (0, 7)),
        ((0, 10, 0), 5, (0, 0)),  # StopReplica
        ((2, 2), 5, (0, 1)),
        ((2, 4), 5, (0, 2)),
        ((2, 6), 5, (0, 3)),
        ((3, 9), 5, (0, 4)),
        ((0, 10, 0), 6, (0, 2)),  # UpdateMetadata
        ((0, 10, 2), 6, (0, 3)),
        ((1, 0), 6, (0, 4)),
        ((2, 2), 6, (0, 5)),
        ((2, 4), 6, (0, 6)),
        ((2, 8), 6, (0, 7)),
        ((3, 4), 6, (0, 8)),
        ((3, 4), 58, (0, 0)),  # Envelope (zkBroker listener from 3.4)
        ((3, 9), 58, (0, 0)),
    ],
)
def test_spot_checks(release: Release, api_key: int, expected: tuple[int, int]) -> None:
    assert advertised_range(release, api_key) == expected


_ABSENT_FROM_0_10_0 = (
    {19, 20, 21, 22, 23, 32, 33, 34, 35, 36, 37, 42, 43, 44, 45, 46, 47, 50, 51, 60, 62}
    | {56, 57, 63, 67}
    | {38, 39, 40, 41}
    | {24, 25, 26, 27, 28, 61, 65, 66}
    | {48, 49}
    | {29, 30, 31}
    | {58}  # Envelope: 3.4+
    | {68, 69}  # KIP-848: 3.7+ / 3.8+
)


@pytest.mark.parametrize(
    ("release", "absent"),
    [
        ((0, 10, 0), _ABSENT_FROM_0_10_0),
        (
            (0, 10, 2),
            {21, 22, 23, 32, 33, 34, 35, 36, 37, 42, 43, 44, 45, 46, 47, 50, 51, 57, 60, 62, 63}
            | {56, 67}
            | {38, 39, 40, 41}
            | {24, 25, 26, 27, 28, 61, 65, 66}
            | {48, 49}
            | {29, 30, 31}
            | {58}  # Envelope: 3.4+
            | {68, 69},  # KIP-848: 3.7+ / 3.8+
        ),
        ((0, 11, 0), {34, 35, 36, 37, 42, 43, 44, 45, 46, 47, 50, 51, 56, 57, 60, 62, 63, 67}
         | {38, 39, 40, 41} | {61, 65, 66} | {48, 49} | {58} | {68, 69}),
        ((1, 0), {42, 43, 44, 45, 46, 47, 50, 51, 56, 57, 60, 62, 63, 67} | {38, 39, 40, 41}
         | {61, 65, 66} | {48, 49} | {58} | {68, 69}),
        ((2, 1), {43, 44, 45, 46, 47, 50, 51, 56, 57, 60, 62, 63, 67} | {61, 65, 66} | {48, 49}
         | {58} | {68, 69}),
        ((2, 3), {45, 46, 47, 50, 51, 56, 57, 60, 62, 63, 67} | {61, 65, 66} | {48, 49} | {58}
         | {68, 69}),
        ((2, 4), {50, 51, 56, 57, 60, 62, 63, 67} | {61, 65, 66} | {48, 49} | {58} | {68, 69}),
        ((2, 6), {50, 51, 56, 57, 60, 62, 63, 67} | {61, 65, 66} | {58} | {68, 69}),
        ((2, 7), {60, 62, 63, 67} | {61, 65, 66} | {58} | {68, 69}),
        ((2, 8), {67} | {65, 66} | {58} | {68, 69}),
        ((3, 3), {58} | {68, 69}),
        ((3, 6), {68, 69}),
        ((3, 7), {69}),
    ],
)
def test_keys_not_yet_advertised(release: Release, absent: set[int]) -> None:
    table = API_VERSION_RANGES[release]
    assert absent.isdisjoint(table)
    # The keys these pins know: 0.10.0's and those it lacks. A key added to the history later
    # (first advertised after 0.10.0) is left to its own history, not re-typed here.
    pinned = set(API_VERSION_RANGES[(0, 10, 0)]) | _ABSENT_FROM_0_10_0
    assert set(table) & pinned == pinned - absent


# --- 3.9 against the shared copy of Kafka's message specs -------------------


def _load_spec(path: Path) -> dict[str, object]:
    lines = [ln for ln in path.read_text().splitlines() if not ln.lstrip().startswith("//")]
    spec: dict[str, object] = json.loads("\n".join(lines))
    return spec


def _range(valid_versions: str) -> tuple[int, int]:
    lo, _, hi = valid_versions.partition("-")
    return int(lo), int(hi or lo)


def test_3_9_matches_shared_message_specs(kafka_message_specs: Path) -> None:
    files = sorted(kafka_message_specs.glob("*Request.json"))
    assert files, f"no *Request.json in {kafka_message_specs}"
    table = API_VERSION_RANGES[(3, 9)]
    seen: set[int] = set()
    for path in files:
        spec = _load_spec(path)
        if spec.get("type") != "request":
            continue
        api_key = spec["apiKey"]
        assert isinstance(api_key, int), path
        if api_key not in API_NAMES:
            continue  # e.g. ACL and SASL APIs, not covered by the module
        listeners = spec.get("listeners")
        assert isinstance(listeners, list), path
        assert ("zkBroker" in listeners) != (api_key in SERVED_BEYOND_ZK_BROKER), path
        valid = spec["validVersions"]
        assert isinstance(valid, str), path
        lo, hi = _range(valid)
        if spec.get("latestVersionUnstable"):
            hi -= 1
        assert table.get(api_key) == (lo, hi), f"{path.name}: {valid}"
        seen.add(api_key)
    missing = set(API_NAMES) - seen
    assert not missing, f"no spec file for covered keys {sorted(missing)}"


def test_controller_only_specs_are_not_advertised(kafka_message_specs: Path) -> None:
    for path in sorted(kafka_message_specs.glob("*Request.json")):
        spec = _load_spec(path)
        listeners = spec.get("listeners")
        if isinstance(listeners, list) and "zkBroker" not in listeners:
            api_key = spec["apiKey"]
            assert isinstance(api_key, int)
            if api_key in SERVED_BEYOND_ZK_BROKER:
                continue  # KIP-631 leases: zkbroker serves them on every listener
            for r in RELEASES:
                assert advertised_range(r, api_key) is None, (path.name, r)
