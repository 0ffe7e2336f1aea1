"""kafka-python infers the emulated release from what zkbroker advertises, over the wire.

kafka-python decides which requests (and versions) to send from the release it infers
(`BrokerVersionData`: one "release R if key K reaches version V" check per release, newest
first). A mock broker whose ApiVersions misleads it breaks real client code paths (e.g.
`create_topics` with replica assignments refused as IncompatibleBrokerVersion), so every
release in the table is checked with a live cluster.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from kafka import KafkaAdminClient

from zkbroker import Cluster
from zkbroker.broker.protocol.releases import RELEASES
from zkbroker.zk_layout.release import release_name

# Releases kafka-python would infer as another one: none, now that zkbroker serves every key
# its probes use (DescribeAcls v2/v3 for 2.5/3.3, DescribeClientQuotas for 2.6,
# LeaderAndIsr v7 for 3.4, AddPartitionsToTxn v4 for 3.6); tests/unit/
# test_kafka_python_inference.py shows which key decides each release.
INFERRED_AS_ANOTHER: dict[tuple[int, ...], tuple[int, ...]] = {}


def _kafka_python_name(release: tuple[int, ...]) -> tuple[int, ...]:
    # kafka-python names 0.11.0 as (0, 11); other releases as zkbroker does.
    return (0, 11) if release == (0, 11, 0) else release


@pytest.mark.parametrize("release", RELEASES, ids=[release_name(r) for r in RELEASES])
def test_kafka_python_infers_the_emulated_release(
    cluster_factory: Callable[..., Cluster], release: tuple[int, ...]
) -> None:
    cluster = cluster_factory(broker_ids=(0,), kafka_version=release)
    logging.getLogger("kafka").setLevel(logging.WARNING)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        inferred = admin._manager.broker_version
    finally:
        admin.close()
    expected = INFERRED_AS_ANOTHER.get(release, release)
    assert inferred == _kafka_python_name(expected)
