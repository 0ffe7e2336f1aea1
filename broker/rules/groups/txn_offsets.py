"""Offsets committed inside transactions and not completed yet (pending transactional offsets).

Follows Kafka 3.9's ``GroupMetadata`` (``pendingTransactionalOffsetCommits``,
``prepareTxnOffsetCommit``, ``completePendingTxnOffsetCommit``,
``hasPendingOffsetCommitsForTopicPartition``) and ``GroupMetadataManager``
(``openGroupsForProducer``, ``handleTxnCompletion``), see
docs/kafka-behaviour.md §17: a TxnOffsetCommit's offsets wait here, keyed by producer id and
group, until the transaction's marker reaches the group's ``__consumer_offsets`` partition; a
COMMIT makes them the group's committed offsets, an ABORT drops them. Meanwhile OffsetFetch with
``require_stable`` answers UNSTABLE_OFFSET_COMMIT for those partitions.

Deliberately not here: which partition a group lives in and the log (the caller passes a
predicate and writes the records), and Kafka's ordering of a later non-transactional commit
against a completing transactional one by their log positions (the completed offset wins here).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from zkbroker.broker.rules.groups.classic_group import CommittedOffset, TopicPartition


@dataclass(slots=True)
class PendingTxnOffsets:
    """producer id -> group -> offsets waiting for the producer's transaction to end."""

    by_producer: dict[int, dict[str, dict[TopicPartition, CommittedOffset]]] = field(
        default_factory=dict
    )

    def add(
        self, producer_id: int, group_id: str, offsets: Mapping[TopicPartition, CommittedOffset]
    ) -> None:
        groups = self.by_producer.setdefault(producer_id, {})
        groups.setdefault(group_id, {}).update(offsets)

    def complete(
        self, producer_id: int, in_partition: Callable[[str], bool]
    ) -> dict[str, dict[TopicPartition, CommittedOffset]]:
        """Take the producer's pending offsets of the groups `in_partition` selects (those of
        the ``__consumer_offsets`` partition the marker went to)."""
        groups = self.by_producer.get(producer_id)
        if not groups:
            return {}
        done = {g: offsets for g, offsets in groups.items() if in_partition(g)}
        for group_id in done:
            del groups[group_id]
        if not groups:
            del self.by_producer[producer_id]
        return done

    def has_group(self, group_id: str) -> bool:
        return any(group_id in groups for groups in self.by_producer.values())

    def is_pending(self, group_id: str, tp: TopicPartition) -> bool:
        return any(tp in groups.get(group_id, ()) for groups in self.by_producer.values())

    def drop_partitions(self, group_id: str, partitions: Iterable[TopicPartition]) -> None:
        """OffsetDelete removed the group's offsets of these partitions: their pending
        transactional offsets go too (``GroupMetadata.removeOffsets``). The producer's entry
        stays, even emptied, until its transaction ends, as Kafka's map entry does (so the
        group still ``hasOffsets`` and is not Dead meanwhile)."""
        wanted = set(partitions)
        for groups in self.by_producer.values():
            offsets = groups.get(group_id)
            if offsets is not None:
                for tp in wanted & offsets.keys():
                    del offsets[tp]

    def drop_groups(self, group_ids: set[str]) -> None:
        """The groups were unloaded or deleted: their pending offsets go with them."""
        for producer_id in list(self.by_producer):
            groups = self.by_producer[producer_id]
            for group_id in group_ids & groups.keys():
                del groups[group_id]
            if not groups:
                del self.by_producer[producer_id]
