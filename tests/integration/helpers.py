"""Small helpers shared by integration tests."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

from kazoo.client import KazooClient

T = TypeVar("T")


def wait_until(fn: Callable[[], T], timeout: float = 15.0, interval: float = 0.05) -> T:
    """Poll `fn` until it returns something truthy; fail with its last value otherwise."""
    deadline = time.monotonic() + timeout
    value = fn()
    while not value:
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s (last value {value!r})")
        time.sleep(interval)
        value = fn()
    return value


def wait_visible(cluster: Any, name: str) -> Any:
    """Wait until the cluster's metadata image shows every partition of topic `name`."""

    def visible() -> Any:
        topic = cluster.engine.image.topics.get(name)
        return topic if topic is not None and topic.all_partitions_led else None

    return wait_until(visible)


def write_topic_like_kafka(
    zk: KazooClient,
    name: str,
    assignment: dict[int, list[int]],
    *,
    leaders: dict[int, int] | None = None,
    controller_epoch: int = 1,
    topic_id: str | None = None,
) -> None:
    """Write a topic the way Kafka's admin path and controller would (znode formats:
    docs/kafka-behaviour.md §1.3, §1.4)."""
    topic = {
        "version": 3,
        "partitions": {str(p): r for p, r in assignment.items()},
        "adding_replicas": {},
        "removing_replicas": {},
    }
    if topic_id:
        topic["topic_id"] = topic_id
    # One multi, so zkbroker's controller never sees the topic without these states (it
    # would create them itself, as Kafka's controller does).
    tx = zk.transaction()
    tx.create(f"/brokers/topics/{name}", json.dumps(topic).encode())
    tx.create(f"/brokers/topics/{name}/partitions")
    for p, replicas in assignment.items():
        leader = (leaders or {}).get(p, replicas[0])
        state = {
            "controller_epoch": controller_epoch,
            "leader": leader,
            "version": 1,
            "leader_epoch": 0,
            "isr": replicas,
        }
        tx.create(f"/brokers/topics/{name}/partitions/{p}")
        tx.create(f"/brokers/topics/{name}/partitions/{p}/state", json.dumps(state).encode())
    results = tx.commit()
    failed = [r for r in results if isinstance(r, Exception)]
    assert not failed, failed
