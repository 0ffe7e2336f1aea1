"""A `zkbroker run --log-dir` directory written by the release before per-replica logs, kept as
`tests/data/log-dir-<date>.tar.gz`, and the records it holds.

A storage change must still load such a directory with its data (docs/kafka-behaviour.md §15:
the log-dir layout): `tests/integration/test_log_dir_compat.py` starts today's zkbroker on a
copy and reads everything back with real clients. The archive is written once, by the release
it stands for, and never again:

    .venv/bin/python -m tests.log_dir_fixture tests/data/log-dir-2026-11-29.tar.gz

What it holds: three brokers in one process; `plain` (3 partitions, replication factor 3,
keyed records with headers), `compacted` (cleanup.policy=compact, keys written over), `txn`
(one committed and one aborted transaction), and the committed offsets of group `fixture`.
"""

from __future__ import annotations

import signal
import sys
import tarfile
import tempfile
from pathlib import Path

PLAIN = "plain"
COMPACTED = "compacted"
TXN = "txn"
GROUP = "fixture"
PARTITIONS = 3


def plain_records(partition: int) -> list[tuple[bytes, bytes, list[tuple[str, bytes]]]]:
    """(key, value, headers) of each record of `plain`'s partition, in offset order."""
    return [
        (b"k%d-%d" % (partition, i), b"value %d of %d" % (i, partition), [("n", b"%d" % i)])
        for i in range(10)
    ]


# Written in this order to `compacted` partition 0; the last value of each key is what a
# compacted read keeps (the cleaner may not have run, so every record may still be there).
COMPACTED_WRITES = [(b"a", b"1"), (b"b", b"1"), (b"a", b"2"), (b"c", b"1"), (b"a", b"3")]
COMMITTED_TXN = [b"committed-1", b"committed-2"]
ABORTED_TXN = [b"aborted-1"]
# The group's committed offsets on `plain`, partition -> offset.
COMMITTED_OFFSETS = {0: 4, 1: 7, 2: 10}


def write(archive: Path) -> None:
    """Run zkbroker on a fresh log dir, write the content above, stop it, archive the dir."""
    from tests.integration.test_log_dir_kept import Run

    with tempfile.TemporaryDirectory() as tmp:
        log_dir = Path(tmp) / "log-dir"
        run = Run(log_dir, Path(tmp) / "run.stderr", "--brokers", "3")
        try:
            run.wait_ready()
            _fill(run.bootstrap)
            run.stop(signal.SIGTERM)
        finally:
            run.kill()
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(log_dir, arcname="log-dir", filter=_kept)


# What the writing machine left that no release reads back: ZooKeeper's own log and output, and
# the pid in the ZooKeeper lock file (the lock is the file's, whatever it holds).
_NOT_KEPT = {"zookeeper.log", "zookeeper.out", ".zkbroker-zookeeper.lock"}


def _kept(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if Path(member.name).name in _NOT_KEPT:
        return None
    member.uid = member.gid = 0
    member.uname = member.gname = ""
    return member


def _fill(bootstrap: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [
        NewTopic(PLAIN, PARTITIONS, 3),
        NewTopic(COMPACTED, 1, 1, config={"cleanup.policy": "compact"}),
        NewTopic(TXN, 1, 3),
    ]
    for future in admin.create_topics(topics).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for partition in range(PARTITIONS):
        for key, value, headers in plain_records(partition):
            producer.produce(PLAIN, value, key, partition=partition, headers=headers)
    for key, value in COMPACTED_WRITES:
        producer.produce(COMPACTED, value, key, partition=0)
    assert producer.flush(30) == 0
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": "fixture-txn"})
    txn.init_transactions(30)
    for values, commit in ((COMMITTED_TXN, True), (ABORTED_TXN, False)):
        txn.begin_transaction()
        for value in values:
            txn.produce(TXN, value, partition=0)
        txn.commit_transaction(30) if commit else txn.abort_transaction(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    try:
        consumer.commit(
            offsets=[TopicPartition(PLAIN, p, o) for p, o in COMMITTED_OFFSETS.items()],
            asynchronous=False,
        )
    finally:
        consumer.close()


if __name__ == "__main__":
    write(Path(sys.argv[1]))
