"""Join a zkbroker cluster as a broker over the protocol (KIP-631): BrokerRegistration, then
BrokerHeartbeat, with zkbroker's codec and its blocking wire client.

    python examples/join_as_broker.py

It starts a 2-broker cluster in this process (an embedded ZooKeeper, free ports, a 3 s
`broker_session_timeout_ms`), registers broker 7 with the active controller, heartbeats while
Metadata lists it, then stops heartbeating and waits for the controller to remove it. Against a
running cluster, send the same two requests to the controller broker's listener. What the
controller does with them: docs/kafka-behaviour.md §10.8.
"""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka.admin import AdminClient

from zkbroker import Cluster
from zkbroker.broker.protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from zkbroker.broker.protocol.messages.broker_registration import (
    BrokerRegistrationRequest,
    Listener,
)
from zkbroker.broker.toolkit.wire import WireClient

JOINER = 7
T = TypeVar("T")


def wait_for(condition: Callable[[], T], timeout_s: float = 15.0) -> T:
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met in time")
        time.sleep(0.1)
    return value


def join_and_fall_silent(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})

    def in_metadata() -> list[int]:
        return sorted(admin.list_topics(timeout=5).brokers)

    wait_for(lambda: cluster.controller_id >= 0)
    controller = cluster.brokers[cluster.controller_id]  # only the controller answers
    cluster_id = wait_for(lambda: cluster.engine.image.cluster_id)  # the id in /cluster/id
    with WireClient(controller.host, controller.port) as client:
        epoch = client.request(
            0,
            BrokerRegistrationRequest(
                broker_id=JOINER,
                cluster_id=cluster_id,
                incarnation_id=uuid.uuid4(),
                listeners=[Listener(name="PLAINTEXT", host="127.0.0.1", port=19092)],
            ),
        ).broker_epoch
        print(f"broker {JOINER} registered, broker epoch {epoch}")
        for _ in range(4):  # a heartbeat a second keeps the lease
            answer = client.request(0, BrokerHeartbeatRequest(broker_id=JOINER, broker_epoch=epoch))
            assert answer.error_code == 0, answer
            time.sleep(1)
        print("in Metadata:", in_metadata())
    # Silence: after the session timeout the controller deletes /brokers/ids/7.
    wait_for(lambda: JOINER not in in_metadata())
    print(f"no heartbeat for 3 s, broker {JOINER} is gone:", in_metadata())


def main() -> int:
    with Cluster(brokers=2, port=0, broker_session_timeout_ms=3000) as cluster:
        join_and_fall_silent(cluster)  # its client is gone before the brokers stop
    return 0


if __name__ == "__main__":
    sys.exit(main())
