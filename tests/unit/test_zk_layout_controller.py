"""Encode/decode of /controller, /controller_epoch, /feature, /cluster/id and
/latest_producer_id_block."""

from __future__ import annotations

import json
from typing import Any

import pytest

from zkbroker.zk_layout import (
    ClusterIdNode,
    ControllerEpochNode,
    ControllerInfo,
    ControllerNode,
    FeatureLevel,
    FeatureNode,
    FeatureState,
    ProducerIdBlock,
    ProducerIdBlockNode,
    ZnodeFormatError,
)


def _js(data: bytes) -> Any:
    return json.loads(data)


# --- /controller ----------------------------------------------------------------------------


def test_controller_v1_until_3_3() -> None:
    info = ControllerInfo(1, 1620000000000)
    for release in [(0, 10), (2, 8), (3, 3)]:
        assert ControllerNode.written_version(release) == 1
        data = ControllerNode.encode(info, release)
        assert data == b'{"version":1,"brokerid":1,"timestamp":"1620000000000"}'
        assert ControllerNode.decode(data) == info


def test_controller_v2_from_3_4() -> None:
    info = ControllerInfo(2, 5)
    data = ControllerNode.encode(info, (3, 4))
    assert _js(data) == {"version": 2, "brokerid": 2, "timestamp": "5", "kraftControllerEpoch": -1}
    assert ControllerNode.decode(data) == info
    assert (
        ControllerNode.decode(
            b'{"version":2,"brokerid":3,"timestamp":"1","kraftControllerEpoch":7}'
        ).kraft_controller_epoch
        == 7
    )


def test_controller_reader_needs_only_brokerid() -> None:
    assert ControllerNode.decode(b'{"brokerid":4}') == ControllerInfo(4, -1, -1)


@pytest.mark.parametrize(
    "data", [b"", b"x", b"[]", b'{"version":1}', b'{"version":1,"brokerid":"1"}']
)
def test_controller_rejects(data: bytes) -> None:
    with pytest.raises(ZnodeFormatError):
        ControllerNode.decode(data)


def test_controller_now() -> None:
    assert ControllerInfo.now(3).timestamp_ms > 1_600_000_000_000


# --- /controller_epoch ----------------------------------------------------------------------


def test_controller_epoch_is_plain_text() -> None:
    assert ControllerEpochNode.path() == "/controller_epoch"
    assert ControllerEpochNode.encode(1, (2, 8)) == b"1"
    assert ControllerEpochNode.encode(0, (2, 8)) == b"0"
    assert ControllerEpochNode.decode(b"17") == 17
    assert ControllerEpochNode.written_version((2, 8)) == 0


@pytest.mark.parametrize("data", [b"", b" 1", b"1\n", b'"1"', b"1.0", b"\xff", b"99999999999"])
def test_controller_epoch_rejects(data: bytes) -> None:
    with pytest.raises(ZnodeFormatError):
        ControllerEpochNode.decode(data)


# --- /feature -------------------------------------------------------------------------------


def test_feature_written_versions() -> None:
    assert FeatureNode.written_version((2, 7)) == 1
    assert FeatureNode.written_version((3, 2)) == 1
    assert FeatureNode.written_version((3, 3)) == 2


def test_feature_empty_enabled_and_disabled() -> None:
    assert FeatureNode.encode(FeatureState.for_release((2, 8)), (2, 8)) == (
        b'{"version":1,"status":1,"features":{}}'
    )
    assert FeatureState.for_release((2, 6)).status == 0
    assert not FeatureState.for_release((2, 6)).enabled
    assert FeatureNode.enabled_empty() == FeatureState(1)
    decoded = FeatureNode.decode(b'{"version":1,"status":0,"features":{}}')
    assert decoded == FeatureState(0, {}, 1)


def test_feature_v1_entries() -> None:
    data = (
        b'{"version":1,"status":1,"features":{"f":{"min_version_level":1,"max_version_level":3}}}'
    )
    state = FeatureNode.decode(data)
    assert state == FeatureState(1, {"f": FeatureLevel(3, 1)}, 1)
    assert FeatureNode.encode(state, (3, 0)) == data


def test_feature_v2_entries() -> None:
    data = b'{"version":2,"status":1,"features":{"metadata.version":{"max_version_level":7}}}'
    state = FeatureNode.decode(data)
    assert state == FeatureState(1, {"metadata.version": FeatureLevel(7)}, 2)
    assert FeatureNode.encode(state, (3, 5)) == data
    # A v2 value written as v1 (3.3+ with an older IBP) stores max as both bounds.
    assert _js(FeatureNode.encode(state, (3, 2)))["features"] == {
        "metadata.version": {"min_version_level": 7, "max_version_level": 7}
    }


@pytest.mark.parametrize(
    "doc",
    [
        {"version": 0, "status": 1, "features": {}},
        {"version": 3, "status": 1, "features": {}},
        {"version": 1, "features": {}},
        {"version": 1, "status": 2, "features": {}},
        {"version": 1, "status": 1},
        {"version": 1, "status": 1, "features": {"f": {"max_version_level": 2}}},
        {"version": 2, "status": 1, "features": {"f": {"min_version_level": 1}}},
        {
            "version": 1,
            "status": 1,
            "features": {"f": {"min_version_level": 0, "max_version_level": 2}},
        },
        {
            "version": 1,
            "status": 1,
            "features": {"f": {"min_version_level": 3, "max_version_level": 2}},
        },
        {"version": 2, "status": 1, "features": {"f": {"max_version_level": 0}}},
        {"version": 2, "status": 1, "features": {"f": 3}},
    ],
)
def test_feature_rejects(doc: Any) -> None:
    with pytest.raises(ZnodeFormatError):
        FeatureNode.decode(json.dumps(doc).encode())


# --- /cluster/id ----------------------------------------------------------------------------


def test_cluster_id_version_is_a_string() -> None:
    data = ClusterIdNode.encode("p3t0vCrqQkKpWBbNG2j1Zg", (2, 8))
    assert data == b'{"version":"1","id":"p3t0vCrqQkKpWBbNG2j1Zg"}'
    assert ClusterIdNode.decode(data) == "p3t0vCrqQkKpWBbNG2j1Zg"
    assert ClusterIdNode.path() == "/cluster/id"


@pytest.mark.parametrize("data", [b"", b"x", b'"id"', b'{"version":"1"}', b'{"id":1}'])
def test_cluster_id_rejects(data: bytes) -> None:
    with pytest.raises(ZnodeFormatError):
        ClusterIdNode.decode(data)


# --- /latest_producer_id_block --------------------------------------------------------------


def test_producer_id_block() -> None:
    block = ProducerIdBlock(0, 0, 999)
    data = ProducerIdBlockNode.encode(block, (2, 8))
    assert data == b'{"version":1,"broker":0,"block_start":"0","block_end":"999"}'
    assert ProducerIdBlockNode.decode(data) == block
    assert block.size == 1000
    assert ProducerIdBlock.after(None, 3) == ProducerIdBlock(3, 0, 999)
    assert ProducerIdBlock.after(block, 1) == ProducerIdBlock(1, 1000, 1999)
    # created with null data at broker start: no block yet
    assert ProducerIdBlockNode.decode(b"") is None
    assert ProducerIdBlockNode.encode(None, (2, 8)) == b""
    big = ProducerIdBlock(1, 2**40, 2**40 + 999)
    assert ProducerIdBlockNode.decode(ProducerIdBlockNode.encode(big, (3, 0))) == big


@pytest.mark.parametrize(
    "doc",
    [
        {"version": 1, "broker": 0, "block_start": 0, "block_end": "999"},
        {"version": 1, "broker": 0, "block_start": "x", "block_end": "999"},
        {"version": 1, "block_start": "0", "block_end": "999"},
        {"version": 1, "broker": 0, "block_start": "1000", "block_end": "999"},
    ],
)
def test_producer_id_block_rejects(doc: Any) -> None:
    with pytest.raises(ZnodeFormatError):
        ProducerIdBlockNode.decode(json.dumps(doc).encode())
