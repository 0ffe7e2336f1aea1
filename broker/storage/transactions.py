"""A partition's transactions: ongoing ones, the last stable offset, and aborted ones for Fetch.

Follows Kafka 3.9's `ProducerStateManager`, `ProducerAppendInfo` and `TransactionIndex` as
`UnifiedLog.append` uses them (docs/kafka-behaviour.md §17, "The partition's side");
`append_end_txn_marker` writes a COMMIT/ABORT control batch at the log end. `PartitionLog`
feeds it every transactional v2 batch in offset order (appends, other processes' batches,
rebuilds) from its index callback; the log cleaner reads the aborted index and keeps the
entries whose marker stayed (`keep_aborted_between`).

Not here: producer epoch and sequence checks (`zkbroker.broker.rules.producer_state`),
`.txnindex` files and snapshots (rebuilt by observing batches), KIP-890's partition-leader
verification, and when a marker is written (the transaction coordinator).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.records import RecordBatchV2, iter_batches
from zkbroker.broker.protocol.records.control import encode_end_txn_marker, read_end_txn_marker

if TYPE_CHECKING:  # the log holds this state: imported for the marker helper's type only
    from zkbroker.broker.storage.partition_log import PartitionLog


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    aborted: bool


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One entry of Kafka's TransactionIndex (what Fetch v4+ lists, as producer id and first
    offset, for a read_committed consumer to skip)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


@dataclass(frozen=True, slots=True)
class TxnAppendError:
    code: int
    message: str


@dataclass(slots=True)
class PartitionTransactions:
    """The transactions of one partition, as its batches left them."""

    # producer id -> first offset of its open transaction; insertion order is offset order
    # because batches are observed in offset order (Kafka keeps a TreeMap by first offset).
    ongoing: dict[int, int] = field(default_factory=dict)
    aborted: list[AbortedTxn] = field(default_factory=list)
    coordinator_epochs: dict[int, int] = field(default_factory=dict)
    # Every batch below this offset has been observed.
    synced_to: int = 0

    # ---- checks before an append (ProducerAppendInfo) ---------------------------------------

    def check(self, batch: RecordBatchV2, topic_partition: str) -> TxnAppendError | None:
        pid, offset = batch.producer_id, batch.base_offset
        if batch.is_control:
            if batch.records_count == 0:
                return None  # the cleaner emptied it: nothing to check
            marker = read_end_txn_marker(batch)
            current = self.coordinator_epochs.get(pid, -1)
            if marker.coordinator_epoch < current:
                return TxnAppendError(
                    ec.TRANSACTION_COORDINATOR_FENCED,
                    f"Invalid coordinator epoch for producerId {pid} at offset {offset} in "
                    f"partition {topic_partition}: {marker.coordinator_epoch} (zombie), "
                    f"{current} (current)",
                )
            return None
        if batch.has_producer_id and not batch.is_transactional and pid in self.ongoing:
            # Kafka prints the offset's LogOffsetMetadata, with no segment known yet.
            return TxnAppendError(
                ec.INVALID_TXN_STATE,
                f"Expected transactional write from producer {pid} at offset "
                f"(offset={offset}, segment=[-1:-1]) in partition {topic_partition}",
            )
        return None

    # ---- what an appended batch changes (UnifiedLog.append's completed transactions) --------

    def observe(self, batch: RecordBatchV2) -> CompletedTxn | None:
        self.synced_to = max(self.synced_to, batch.last_offset + 1)
        if not batch.is_transactional:
            return None
        pid = batch.producer_id
        if not batch.is_control:
            self.ongoing.setdefault(pid, batch.base_offset)
            return None
        if batch.records_count == 0:
            return None  # an emptied control batch: its whole transaction was cleaned away
        marker = read_end_txn_marker(batch)
        self.coordinator_epochs[pid] = marker.coordinator_epoch
        first = self.ongoing.pop(pid, None)
        if first is None:
            return None  # an empty transaction: nothing to index, the LSO does not move
        completed = CompletedTxn(pid, first, batch.base_offset, not marker.commit)
        if completed.aborted:
            # lastStableOffset(completedTxn): the next other open transaction's start, else
            # just past the marker.
            lso = next(iter(self.ongoing.values()), completed.last_offset + 1)
            self.aborted.append(AbortedTxn(pid, first, completed.last_offset, lso))
        return completed

    def observe_chunk(self, data: bytes | memoryview) -> int:
        """Observe the whole batches of a chunk read from the log (a rebuild, sliced by the
        caller), skipping those already observed; legacy batches carry no transactions. Returns
        the offset after the last whole batch (``synced_to``)."""
        for batch in iter_batches(data):
            if isinstance(batch, RecordBatchV2) and batch.last_offset >= self.synced_to:
                self.observe(batch)
        return self.synced_to

    # ---- reads --------------------------------------------------------------------------------

    @property
    def first_unstable_offset(self) -> int | None:
        return next(iter(self.ongoing.values()), None)

    def last_stable_offset(self, high_watermark: int) -> int:
        """What read_committed consumers may read up to (UnifiedLog.lastStableOffset)."""
        first = self.first_unstable_offset
        return high_watermark if first is None else min(first, high_watermark)

    def aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """TransactionIndex.collectAbortedTxns over the partition: transactions that overlap
        [fetch_offset, upper_bound_offset), the bound being just past the fetched batches."""
        found = []
        for txn in self.aborted:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                break
        return found

    def keep_aborted_between(self, lo: int, hi: int, kept: set[AbortedTxn]) -> None:
        """The log cleaner rewrote the offsets [lo, hi): of the entries whose marker lies there,
        only ``kept`` remain (the cleaned segment's ``.txnindex``,
        ``zkbroker.broker.storage.cleaner``)."""
        self.aborted = [t for t in self.aborted if not lo <= t.last_offset < hi or t in kept]

    def forget_producer(self, producer_id: int) -> None:
        """Its producer state was dropped (a log start passing it before 2.4): its open
        transaction no longer holds the LSO back, and its coordinator epoch is forgotten."""
        self.ongoing.pop(producer_id, None)
        self.coordinator_epochs.pop(producer_id, None)

    def drop_segments_below(self, first_segment_base: int) -> None:
        """Retention deleted the segments below this base: their index entries (the ones whose
        marker lay in them) go with them, as each segment's .txnindex file does."""
        self.aborted = [t for t in self.aborted if t.last_offset >= first_segment_base]


def append_end_txn_marker(
    log: PartitionLog,
    txns: PartitionTransactions | None = None,
    *,
    commit: bool,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    leader_epoch: int,
    now_ms: int,
) -> TxnAppendError | CompletedTxn | None:
    """Write a COMMIT/ABORT marker at the log end (as a WriteTxnMarkers append does) and record
    it: an error if the producer epoch is older than the log's (INVALID_PRODUCER_EPOCH) or the
    coordinator is a zombie (Kafka's order: ``checkProducerEpoch`` then
    ``checkCoordinatorEpoch``), else the transaction it completed (None for an empty one).
    ``txns`` defaults to the log's own state (which the append itself updates); another one is
    updated here. The caller holds the partition for appends, as for any produce."""
    offset = log.log_end_offset
    data = encode_end_txn_marker(
        commit=commit,
        offset=offset,
        timestamp=now_ms,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        coordinator_epoch=coordinator_epoch,
        partition_leader_epoch=leader_epoch,
    )
    batch = RecordBatchV2(data)
    name = f"{log.topic}-{log.partition}"
    fenced = log.producers.check_marker(producer_id, producer_epoch, offset, name)
    if fenced is not None:
        return TxnAppendError(fenced.code, fenced.message)
    own = txns is None or txns is log.transactions
    state = log.transactions if txns is None else txns
    error = state.check(batch, name)
    if error is not None:
        return error
    first = state.ongoing.get(producer_id)
    log.append(
        data,
        base_offset=offset,
        last_offset=offset,
        max_timestamp=now_ms,
        offset_of_max_timestamp=offset,
        leader_epoch=leader_epoch,
        now_ms=now_ms,
    )
    if not own:
        return state.observe(batch)
    # The log's index observed the marker while appending.
    return None if first is None else CompletedTxn(producer_id, first, offset, not commit)
