"""The request-hook extension point: interventions (error, delay, hold, drop) and observed
records, seen through raw wire requests against a real cluster."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from zkbroker.broker.protocol.messages.metadata import MetadataRequest
from zkbroker.broker.server.hooks import Intervention, RequestCall, RequestRecord
from zkbroker.broker.toolkit.wire import WireClient


class ScriptedHook:
    """Intervenes on the API named in `plan` once per entry, records everything."""

    def __init__(self, plan: dict[str, list[Intervention]]) -> None:
        self.plan = plan
        self.records: list[RequestRecord] = []

    async def intervene(self, call: RequestCall) -> Intervention | None:
        queue = self.plan.get(call.api_name)
        return queue.pop(0) if queue else None

    def observe(self, record: RequestRecord) -> None:
        self.records.append(record)


class BrokenHook:
    async def intervene(self, call: RequestCall) -> Intervention | None:
        raise RuntimeError("hook bug")

    def observe(self, record: RequestRecord) -> None:
        raise RuntimeError("hook bug")


def client(cluster: Cluster) -> WireClient:
    node = cluster.engine.brokers[0]
    return WireClient(node.host, node.port)


def create(name: str) -> CreateTopicsRequest:
    return CreateTopicsRequest(
        topics=[CreatableTopic(name=name, num_partitions=1, replication_factor=1)],
        timeout_ms=10000,
    )


def test_error_delay_and_observed_records(cluster: Cluster) -> None:
    hook = ScriptedHook(
        {
            "CreateTopics": [
                Intervention(error_code=ec.POLICY_VIOLATION, error_message="no", source="t:1"),
                Intervention(delay_s=0.3, source="t:2"),
            ]
        }
    )
    cluster.engine.hooks.add(BrokenHook())  # a broken hook harms nobody
    cluster.engine.hooks.add(hook)
    with client(cluster) as c:
        (first,) = c.request(5, create("hooked")).topics
        assert (first.error_code, first.error_message) == (ec.POLICY_VIOLATION, "no")
        started = time.monotonic()
        (second,) = c.request(5, create("hooked")).topics
        assert time.monotonic() - started >= 0.3
        assert second.error_code == ec.NONE
        c.request(9, MetadataRequest(topics=None))
    apis = [(r.call.api_name, r.call.header.api_version, r.error_codes) for r in hook.records]
    assert apis == [
        ("CreateTopics", 5, [ec.POLICY_VIOLATION]),
        ("CreateTopics", 5, []),
        ("Metadata", 9, []),
    ]
    assert hook.records[0].intervention is not None and hook.records[0].intervention.source == "t:1"
    assert hook.records[1].latency_us >= 300_000
    assert hook.records[0].call.request.topics[0].name == "hooked"


def test_drop_closes_only_that_connection_and_hold_waits(cluster: Cluster) -> None:
    hold = asyncio.Event()
    hook = ScriptedHook(
        {"Metadata": [Intervention(drop=True, source="d"), Intervention(hold=hold, source="h")]}
    )
    cluster.engine.hooks.add(hook)
    with client(cluster) as dropped, client(cluster) as other:
        with pytest.raises(ConnectionError):
            dropped.request(9, MetadataRequest(topics=None))
        result: dict[str, Any] = {}

        def release_later() -> None:
            time.sleep(0.4)
            cluster.run_sync(hold.set)

        releaser = threading.Thread(target=release_later)
        releaser.start()
        started = time.monotonic()
        result["answer"] = other.request(9, MetadataRequest(topics=None))
        releaser.join()
        assert time.monotonic() - started >= 0.4
        assert result["answer"].brokers
    assert hook.records[0].response is None and hook.records[0].intervention is not None
