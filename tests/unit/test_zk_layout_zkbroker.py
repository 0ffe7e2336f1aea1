"""zkbroker's own nodes under /zkbroker (pure): paths, control node format, strict decoding."""

from __future__ import annotations

import pytest

from zkbroker.zk_layout import (
    ALL_NODE_CLASSES,
    PERSISTENT_ZK_PATHS,
    BrokerControlNode,
    BrokerOwnerNode,
    BrokerState,
    NodeKind,
    ZkbrokerBrokersNode,
    ZkbrokerNode,
    ZnodeFormatError,
)


def test_paths_are_outside_kafkas_layout() -> None:
    assert ZkbrokerNode.path() == "/zkbroker"
    assert ZkbrokerBrokersNode.path() == "/zkbroker/brokers"
    assert BrokerControlNode.path(3) == "/zkbroker/brokers/3"
    assert BrokerOwnerNode.path(3) == "/zkbroker/brokers/3/owner"
    assert BrokerOwnerNode.KIND is NodeKind.EPHEMERAL
    assert BrokerControlNode.KIND is NodeKind.PERSISTENT
    # Listed with every node class, but never created as one of Kafka's persistent paths.
    assert BrokerControlNode in ALL_NODE_CLASSES
    assert not any(p.startswith("/zkbroker") for p in PERSISTENT_ZK_PATHS)


@pytest.mark.parametrize("state", list(BrokerState))
@pytest.mark.parametrize("release", [(0, 10), (2, 8), (3, 9)])
def test_control_node_round_trips_the_same_bytes_for_every_release(
    state: BrokerState, release: tuple[int, ...]
) -> None:
    data = BrokerControlNode.encode(state, release)
    assert data == f'{{"version":1,"state":"{state.value}"}}'.encode()
    assert BrokerControlNode.decode(data) is state
    assert BrokerControlNode.written_version(release) == 1


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"stopped",
        b'{"state":"stopped"}',
        b'{"version":2,"state":"stopped"}',
        b'{"version":1}',
        b'{"version":1,"state":"paused"}',
        b'{"version":1,"state":1}',
    ],
)
def test_control_node_decoding_is_strict(data: bytes) -> None:
    with pytest.raises(ZnodeFormatError) as info:
        BrokerControlNode.decode_at(data, 5)
    assert info.value.where == "/zkbroker/brokers/5"


def test_lease_node_format() -> None:
    from zkbroker.zk_layout.nodes import BrokerLease, BrokerLeaseNode, BrokerLeasesNode

    assert BrokerLeasesNode.path() == "/zkbroker/leases"
    assert BrokerLeaseNode.path(7) == "/zkbroker/leases/7"
    assert BrokerLeaseNode.KIND is NodeKind.PERSISTENT
    assert BrokerLeaseNode in ALL_NODE_CLASSES and BrokerLeasesNode in ALL_NODE_CLASSES
    lease = BrokerLease("0f6cbd8e-2b5c-4a4e-9a53-1c2d3e4f5a6b")
    data = BrokerLeaseNode.encode(lease, (2, 8))
    assert data == b'{"version":1,"incarnation_id":"0f6cbd8e-2b5c-4a4e-9a53-1c2d3e4f5a6b"}'
    assert BrokerLeaseNode.decode(data) == lease
    for bad in (b'{"version":2,"incarnation_id":"x"}', b'{"version":1}', b"[]"):
        with pytest.raises(ZnodeFormatError):
            BrokerLeaseNode.decode(bad)
