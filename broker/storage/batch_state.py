"""What a partition log's batch headers say beyond offsets: the leader epoch cache, idempotent
producers and transactions, fed one stored batch at a time.

Follows what Kafka's ``UnifiedLog.append`` hands ``LeaderEpochFileCache``,
``ProducerStateManager`` and the transaction index, and what it rebuilds after a truncation
(``rebuildProducerState``; docs/kafka-behaviour.md §15, §17). `BatchState.on_batch` is the
index's listener: appends (leader's and follower's), a scan at open and other processes'
batches all go through it. Not here: the rules of each (``epoch_cache``,
``zkbroker.broker.rules.producer_state``, ``transactions``), offsets and segments
(``partition_log``, ``local_log``), producer snapshots (rebuilt by scanning).
"""

from __future__ import annotations

from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol.records import Batch, RecordBatchV2
from zkbroker.broker.rules.producer_state import ProducerStateTable
from zkbroker.broker.storage.epoch_cache import LeaderEpochCache
from zkbroker.broker.storage.segment import Segment, is_v2, scan_store
from zkbroker.broker.storage.transactions import PartitionTransactions
from zkbroker.zk_layout.release import Release

_log = get_logger(__name__)


class BatchState:
    """The epoch cache, producer state and transactions of one partition log."""

    def __init__(self, topic: str, partition: int, release: Release) -> None:
        self.topic = topic
        self.partition = partition
        self.epochs = LeaderEpochCache()
        # Idempotent producers' sequences (`zkbroker.broker.rules.producer_state`).
        self.producers = ProducerStateTable(release)
        # Ongoing and aborted transactions (`zkbroker.broker.storage.transactions`).
        self.transactions = PartitionTransactions()

    def on_batch(self, batch: Batch, base_offset: int, epoch: int) -> None:
        """A batch was indexed (appended, or found in the files)."""
        magic = batch.magic
        # Producer state follows the log: appends here and batches other processes wrote,
        # found when the index catches up. Re-indexing after another process cleaned the
        # log sees batches again; the table already holds them (and more than cleaning left).
        if batch.last_offset >= self.producers.synced_to:
            self.producers.observe_batch(batch, base_offset)
        # The transactional flag test is all a non-transactional batch pays.
        if batch.is_transactional and batch.last_offset >= self.transactions.synced_to:
            assert isinstance(batch, RecordBatchV2)
            self.transactions.observe(batch)
        if is_v2(magic):
            latest = self.epochs.latest_epoch
            # Only a newer epoch starts an entry: an older one (a process whose metadata
            # lags) must not truncate the cache, which Kafka's assign would do. A follower
            # truncates its log (and the cache) before it appends a new leader's batches.
            if epoch >= 0 and (latest is None or epoch > latest):
                self.epochs.assign(epoch, base_offset)
        elif self.epochs.latest_epoch is not None:
            _log.warning(
                "clearing leader epoch cache after a legacy batch",
                topic=self.topic,
                partition=self.partition,
                magic=magic,
            )
            self.epochs.clear()

    def behind(self, end_offset: int) -> bool:
        """Whether the state holds batches past ``end_offset`` (the files now hold another
        log under the same name): then only `rebuild` makes it the log's."""
        return end_offset < max(self.producers.synced_to, self.transactions.synced_to)

    def rebuild(self, segments: list[Segment]) -> None:
        """Producer state and transactions afresh from the batches ``segments`` hold (Kafka
        rebuilds from a snapshot; zkbroker keeps none, so from the first segment)."""
        self.producers = ProducerStateTable(self.producers.release)
        self.transactions = PartitionTransactions()
        for seg in segments:
            scan_store(Segment(seg.base_offset, seg.store), self._observe)

    def _observe(self, batch: Batch, base_offset: int, _epoch: int) -> None:
        self.producers.observe_batch(batch, base_offset)
        if isinstance(batch, RecordBatchV2) and batch.is_transactional:
            self.transactions.observe(batch)

    def log_start_rose(self, log_start_offset: int) -> None:
        """The log start offset rose (or was re-read): the epoch cache keeps the epoch that
        covers it, producer state follows the release's rule, and before 2.4 a dropped
        producer's open transaction goes with it (``truncateHead``)."""
        self.epochs.truncate_from_start(log_start_offset)
        for producer_id in self.producers.truncate_below(log_start_offset):
            self.transactions.forget_producer(producer_id)

    def truncated(self, segments: list[Segment], end_offset: int, log_start_offset: int) -> None:
        """The log lost its batches from ``end_offset`` on: epochs starting there or later
        go (Kafka's ``truncateFromEnd``), producers and transactions are rebuilt."""
        self.epochs.truncate_from_end(end_offset)
        self.rebuild(segments)
        self.log_start_rose(log_start_offset)

    def expire_producers(self, now_ms: int, expiration_ms: int) -> int:
        """Drop producers silent for ``producer.id.expiration.ms``, except those with a
        transaction open here (``ProducerStateManager.removeExpiredProducers``)."""
        return self.producers.expire(now_ms, expiration_ms, self.transactions.ongoing)

    def last_producer_offsets(self) -> dict[int, tuple[int | None, int]]:
        """Each known producer's last data batch's last offset (None when it has none, e.g.
        after a marker bumped its epoch) and its epoch (Kafka's
        ``lastRecordsOfActiveProducers``): the cleaner keeps those batches, even empty, or
        without data the producer's marker of that epoch."""
        return {
            pid: (entry.batches[-1].last_offset if entry.batches else None, entry.epoch)
            for pid, entry in self.producers.entries.items()
        }
