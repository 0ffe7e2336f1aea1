"""A log directory written by an earlier release (`tests/log_dir_fixture.py`, the archive in
tests/data) loads with all its data: `zkbroker run --log-dir` on a copy serves the same topics,
records (keys, values, headers, offsets), the committed transaction without the
aborted one to read_committed consumers, the compacted topic's latest values, and the group's
committed offsets. Real parts: the command in a subprocess with its embedded ZooKeeper,
confluent-kafka over TCP."""

from __future__ import annotations

import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests import log_dir_fixture as fixture
from tests.integration.test_log_dir_kept import Run

ARCHIVES = sorted((Path(__file__).resolve().parents[1] / "data").glob("log-dir-*.tar.gz"))


@pytest.fixture(params=ARCHIVES, ids=lambda p: p.name)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Run]:
    with tarfile.open(request.param) as tar:
        tar.extractall(tmp_path, filter="data")
    run = Run(tmp_path / "log-dir", tmp_path / "run.stderr", "--brokers", "3")
    try:
        run.wait_ready()
        yield run
    finally:
        run.kill()


def _read(bootstrap: str, topic: str, partition: int, **config: str) -> list:
    settings = {"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False}
    consumer = Consumer({**settings, **config})
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        _, end = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)
        messages = []
        while not messages or messages[-1].offset() < end - 1:
            message = consumer.poll(10)
            assert message is not None, f"{topic}-{partition}: read {len(messages)} of {end}"
            assert message.error() is None, message.error()
            messages.append(message)
            if config.get("isolation.level") == "read_committed" and len(messages) == 2:
                break  # the aborted record and the markers are never delivered
        return messages
    finally:
        consumer.close()


def test_an_archived_log_dir_is_served_with_its_data(served: Run) -> None:
    bootstrap = served.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = admin.list_topics(timeout=30).topics
    assert {fixture.PLAIN, fixture.COMPACTED, fixture.TXN} <= set(topics)
    assert len(topics[fixture.PLAIN].partitions) == fixture.PARTITIONS

    for partition in range(fixture.PARTITIONS):
        got = [
            (m.offset(), m.key(), m.value(), m.headers())
            for m in _read(bootstrap, fixture.PLAIN, partition)
        ]
        expected = [
            (offset, key, value, headers)
            for offset, (key, value, headers) in enumerate(fixture.plain_records(partition))
        ]
        assert got == expected

    latest = dict(fixture.COMPACTED_WRITES)
    kept = {m.key(): m.value() for m in _read(bootstrap, fixture.COMPACTED, 0)}
    assert kept == latest

    committed = _read(bootstrap, fixture.TXN, 0, **{"isolation.level": "read_committed"})
    assert [m.value() for m in committed] == fixture.COMMITTED_TXN

    group = Consumer({"bootstrap.servers": bootstrap, "group.id": fixture.GROUP})
    try:
        offsets = group.committed(
            [TopicPartition(fixture.PLAIN, p) for p in range(fixture.PARTITIONS)], timeout=30
        )
    finally:
        group.close()
    assert {tp.partition: tp.offset for tp in offsets} == fixture.COMMITTED_OFFSETS
