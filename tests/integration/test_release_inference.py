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

from broker import Cluster
from broker.protocol.releases import RELEASES
from zk_layout.release import release_name

# Releases kafka-python tells apart only by keys zkbroker does not serve yet (the security
# issue's DescribeAcls/DescribeClientQuotas, the transactions issue's AddPartitionsToTxn and
# LeaderAndIsr): it infers the newest release those keys leave. tests/unit/
# test_kafka_python_inference.py shows that serving them makes these exact too.
UNTIL_SECURITY_AND_TRANSACTIONS = {
    (2, 5): (2, 4),
    (2, 6): (2, 4),
    (3, 3): (3, 2),
    (3, 4): (3, 2),
    (3, 6): (3, 5),
}


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
    expected = UNTIL_SECURITY_AND_TRANSACTIONS.get(release, release)
    assert inferred == _kafka_python_name(expected)
