"""Idempotent producers: per-partition sequence and epoch checks, and duplicate detection.

Kafka 3.9's `ProducerStateManager` / `ProducerAppendInfo` as `UnifiedLog` applies them to a
client's append (docs/kafka-behaviour.md §15; KIP-360 and older releases' rules: §17): a retry
of one of the producer's last five batches is a duplicate answered with that batch's offsets;
an older epoch is INVALID_PRODUCER_EPOCH; a bad sequence is OUT_OF_ORDER_SEQUENCE_NUMBER. End
markers fence older epochs (`check_marker`, `observe_marker`). The table is rebuilt from the
log's batch headers (`observe_batch`); `synced_to` says from which offset other processes' batches
must still be observed.

Not here: transactions (``zkbroker.broker.storage.transactions``), the expiry schedule
(`producer.id.expiration.ms`; entries go with `expire`, which spares open transactions'
producers), snapshots (the state is rebuilt by scanning).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Container
from dataclasses import dataclass, field

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.records import Batch, RecordBatchV2
from zkbroker.broker.protocol.releases import DEFAULT_RELEASE
from zkbroker.zk_layout.release import Release, release_at_least

NUM_BATCHES_TO_RETAIN = 5
INT32_MAX = (1 << 31) - 1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return _decrement(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=deque)
    last_timestamp: int = -1
    # The offset of the producer's last end marker (-1: none): it keeps an entry without
    # batches alive until retention passes it, so the fence it set holds.
    marker_offset: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def duplicate_of(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None


@dataclass(frozen=True, slots=True)
class SequenceError:
    code: int
    message: str


@dataclass(frozen=True, slots=True)
class ProducerBatch:
    """What the checks read of one batch (Kafka's RecordBatch producer fields)."""

    producer_id: int
    epoch: int
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    max_timestamp: int


def _decrement(seq: int, by: int) -> int:
    return seq - by if seq - by >= 0 else INT32_MAX - (by - seq) + 1


def last_sequence(base_sequence: int, offset_delta: int) -> int:
    """A batch's last sequence (Kafka's `DefaultRecordBatch.incrementSequence`: wraps at Int32)."""
    if base_sequence > INT32_MAX - offset_delta:
        return offset_delta - (INT32_MAX - base_sequence) - 1
    return base_sequence + offset_delta


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerStateTable:
    """The producers of one partition, as its log's batches left them."""

    def __init__(self, release: Release = DEFAULT_RELEASE) -> None:
        self.entries: dict[int, ProducerEntry] = {}
        # Every batch below this offset has been observed.
        self.synced_to = 0
        # The emulated release: the sequence checks and what a moved log start drops differ.
        self.release = release
        # The log start offset `truncate_below` last applied (Kafka acts only when it rises).
        self._log_start_offset = 0

    def duplicate(self, batch: ProducerBatch) -> BatchMetadata | None:
        entry = self.entries.get(batch.producer_id)
        return (
            None
            if entry is None
            else entry.duplicate_of(batch.epoch, batch.first_seq, batch.last_seq)
        )

    def check(self, batch: ProducerBatch, topic_partition: str) -> SequenceError | None:
        """Kafka's `checkProducerEpoch` and `checkSequence` for a client's batch."""
        entry = self.entries.get(batch.producer_id)
        pid, offset, first = batch.producer_id, batch.first_offset, batch.first_seq
        if entry is None:
            # An unknown producer (new, or its state went with the log's start): any sequence
            # from 2.5 (KIP-360); before, only 0 (UNKNOWN_PRODUCER_ID from 1.0, which the
            # client answers by resetting its sequences; 0.11 had only the new-epoch error).
            if first == 0 or release_at_least(self.release, (2, 5)):
                return None
            if not release_at_least(self.release, (1, 0)):
                return SequenceError(
                    error_codes.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"Invalid sequence number for new epoch of producer {pid} at offset "
                    f"{offset} in partition {topic_partition}: {batch.epoch} (request epoch), "
                    f"{first} (seq. number)",
                )
            return SequenceError(
                error_codes.UNKNOWN_PRODUCER_ID,
                f"No state of producer {pid} at offset {offset} in partition "
                f"{topic_partition}: its last records may have gone with the log's start",
            )
        current_epoch = entry.epoch
        if batch.epoch < current_epoch:
            return SequenceError(
                error_codes.INVALID_PRODUCER_EPOCH,
                f"Epoch of producer {pid} at offset {offset} in {topic_partition} is "
                f"{batch.epoch}, which is smaller than the last seen epoch {current_epoch}",
            )
        if batch.epoch != current_epoch:
            if first != 0 and current_epoch != NO_PRODUCER_EPOCH:
                return SequenceError(
                    error_codes.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"Invalid sequence number for new epoch of producer {pid}at offset "
                    f"{offset} in partition {topic_partition}: {batch.epoch} (request epoch), "
                    f"{first} (seq. number), {current_epoch} (current producer epoch)",
                )
            return None
        last = entry.last_seq
        if (
            last == NO_SEQUENCE
            and first != 0
            and release_at_least(self.release, (2, 1))
            and not release_at_least(self.release, (2, 5))
        ):
            # 2.1-2.4: the epoch is known (only its marker is left) but not the next sequence.
            return SequenceError(
                error_codes.UNKNOWN_PRODUCER_ID,
                f"Producer {pid} at offset {offset} in partition {topic_partition} has epoch "
                f"{current_epoch} here but no known next sequence",
            )
        if not _in_sequence(last, first):
            return SequenceError(
                error_codes.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"Out of order sequence number for producer {pid} at offset {offset} in "
                f"partition {topic_partition}: {first} (incoming seq. number), {last} "
                "(current end sequence number)",
            )
        return None

    def observe(self, batch: ProducerBatch) -> None:
        """Record an appended batch (from this process or read back from the log)."""
        entry = self.entries.get(batch.producer_id)
        if entry is None:
            entry = self.entries[batch.producer_id] = ProducerEntry(batch.producer_id)
        if batch.epoch != entry.epoch:
            entry.epoch = batch.epoch
            entry.batches.clear()
        if len(entry.batches) == NUM_BATCHES_TO_RETAIN:
            entry.batches.popleft()
        entry.batches.append(
            BatchMetadata(
                last_seq=batch.last_seq,
                last_offset=batch.last_offset,
                offset_delta=batch.last_offset - batch.first_offset,
                timestamp=batch.max_timestamp,
            )
        )
        entry.last_timestamp = batch.max_timestamp
        self.synced_to = max(self.synced_to, batch.last_offset + 1)

    def observe_batch(self, batch: Batch, base_offset: int) -> None:
        """Record a stored batch from ``base_offset`` (appended, or read back from the log):
        an idempotent or transactional producer's data batch or end marker; any other batch
        says nothing about producers."""
        if not isinstance(batch, RecordBatchV2) or not batch.has_producer_id:
            return
        if batch.is_control:
            # An end marker carries the coordinator's epoch for the producer: older ones are
            # fenced from here on (ProducerAppendInfo.appendEndTxnMarker).
            self.observe_marker(
                batch.producer_id, batch.producer_epoch, batch.last_offset, batch.max_timestamp
            )
        else:
            self.observe(
                ProducerBatch(
                    producer_id=batch.producer_id,
                    epoch=batch.producer_epoch,
                    first_seq=batch.base_sequence,
                    last_seq=last_sequence(batch.base_sequence, batch.last_offset - base_offset),
                    first_offset=base_offset,
                    last_offset=batch.last_offset,
                    max_timestamp=batch.max_timestamp,
                )
            )

    def check_marker(
        self, producer_id: int, epoch: int, offset: int, topic_partition: str
    ) -> SequenceError | None:
        """Kafka's `checkProducerEpoch` for an end marker written by the coordinator."""
        entry = self.entries.get(producer_id)
        if entry is None or epoch >= entry.epoch:
            return None
        return SequenceError(
            error_codes.INVALID_PRODUCER_EPOCH,
            f"Epoch of producer {producer_id} at offset {offset} in {topic_partition} is "
            f"{epoch}, which is smaller than the last seen epoch {entry.epoch}",
        )

    def observe_marker(self, producer_id: int, epoch: int, offset: int, timestamp: int) -> None:
        """Record an end marker: its epoch becomes the producer's (a new epoch forgets the
        batches of the old one, as `ProducerStateEntry.maybeUpdateProducerEpoch` does)."""
        entry = self.entries.get(producer_id)
        if entry is None:
            entry = self.entries[producer_id] = ProducerEntry(producer_id)
        if epoch != entry.epoch:
            entry.epoch = epoch
            entry.batches.clear()
        entry.last_timestamp = max(entry.last_timestamp, timestamp)
        entry.marker_offset = offset
        self.synced_to = max(self.synced_to, offset + 1)

    def expire(
        self, now_ms: int, expiration_ms: int, open_transactions: Container[int] = ()
    ) -> int:
        """Drop producers silent for longer than `producer.id.expiration.ms`, never one with a
        transaction open in the partition (``ProducerStateManager.isProducerExpired`` checks
        ``currentTxnFirstOffset``): its state must outlive the transaction's marker."""
        stale = [
            p
            for p, e in self.entries.items()
            if p not in open_transactions and now_ms - e.last_timestamp >= expiration_ms
        ]
        for producer_id in stale:
            del self.entries[producer_id]
        return len(stale)

    def truncate_below(self, log_start_offset: int) -> list[int]:
        """The log start offset rose to ``log_start_offset`` (DeleteRecords, retention, a
        reopened log); returns the producers dropped, whose open transactions go too.

        Per release (docs/kafka-behaviour.md §17): from 2.4 nothing is dropped (KAFKA-7190:
        a producer's state outlives its records until producer id expiry). Before 2.4 Kafka's
        ``truncateHead`` dropped every producer whose last record is below the new start:
        its last data batch from 1.0 (a producer left with only a marker goes too), its last
        batch or marker in 0.11. A kept producer keeps all its batches (the removal of the
        older ones was a no-op in those releases)."""
        if log_start_offset <= self._log_start_offset:
            return []
        self._log_start_offset = log_start_offset
        if release_at_least(self.release, (2, 4)):
            return []
        markers_count = not release_at_least(self.release, (1, 0))
        dropped = []
        for producer_id, entry in self.entries.items():
            last = entry.batches[-1].last_offset if entry.batches else -1
            if markers_count:
                last = max(last, entry.marker_offset)
            if last < log_start_offset:
                dropped.append(producer_id)
        for producer_id in dropped:
            del self.entries[producer_id]
        return dropped
