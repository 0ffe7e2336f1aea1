"""What the replication layer asks of fault injection: the typing of the answers, nothing else.

The replica manager and fetcher receive an object of this shape as a value (in practice
`zkbroker.broker.hooks.replication_faults.ReplicationFaults`, which lives in a layer above and
so cannot be imported here). Each method is a synchronous read of answers precomputed from the
cached fault entries, cheap enough to call per fetch round and partition. The kinds and their
meaning are the README's "Fault injection" (pause-replication, slow-replication,
cut-inter-broker); Kafka has no such thing: this is zkbroker's test tooling.

Not here: matching, caching or storing entries (`zkbroker.broker.hooks.replication_faults`),
acting on the answers (`zkbroker.broker.replication.fetcher`).
"""

from __future__ import annotations

from typing import Protocol


class ReplicationFaultView(Protocol):
    """The replication faults in force in this process, per broker."""

    def fetch_paused(self, follower: int, topic: str, partition: int) -> bool:
        """Whether follower `follower` must send no fetch for `topic`-`partition` now."""
        ...

    def fetch_delay_s(self, follower: int, topic: str, partition: int) -> float:
        """How long to wait before each fetch round of `follower` for the partition (the
        longest of the matching slow-replication entries; 0.0 when none)."""
        ...

    def inter_broker_cut(self, broker: int) -> bool:
        """Whether broker `broker` can neither fetch, be fetched from, nor write its ISR."""
        ...
