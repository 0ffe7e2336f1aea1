"""The records a transaction coordinator writes to ``__transaction_state``, encoded and decoded.

``TransactionLogKey`` v0 (other versions skipped when read) and ``TransactionLogValue`` v0 and
v1 (`value_version`; unknown tags skipped), with tombstones, as Kafka 3.9's JSON specs lay them
out (docs/kafka-behaviour.md §17). Partitions are grouped by topic and sorted, so the bytes are
deterministic. Written by hand because ``scripts/generate_messages.py`` only generates
request/response pairs. `value_of` and `metadata_of` translate to and from `TxnTransit` and
`TxnMetadata` (``zkbroker.broker.rules.transactions.state``).

Not here: the state machine, record batches (``zkbroker.broker.protocol.records``), the choice
of ``__transaction_state`` partition.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

from zkbroker.broker.rules.transactions.state import TxnMetadata, TxnState, TxnTransit
from zkbroker.zk_layout.release import Release, release_at_least

KEY_VERSION = 0
VALUE_VERSION = 0  # without a finalized transaction.version

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class TxnRecordFormatError(ValueError):
    """A key or value of ``__transaction_state`` that cannot be read."""


@dataclass(frozen=True, slots=True)
class TxnLogValue:
    """One transactional id's state as stored (Kafka's ``TransactionLogValue``)."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state_id: int  # TransactionState.id: 0 Empty .. 7 PrepareEpochFence
    # (topic, partition) pairs; None is written as a null array (an Empty value).
    partitions: frozenset[tuple[str, int]] | None
    last_update_timestamp: int
    start_timestamp: int


def value_version(release: Release, transaction_version: int = 0) -> int:
    """TransactionStateManager.usesFlexibleRecords (3.9): v1 once transaction.version > 0 is
    finalized; releases before 3.9 always write v0."""
    return 1 if release_at_least(release, (3, 9)) and transaction_version > 0 else 0


def _uvarint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _string(v: str, flexible: bool) -> bytes:
    raw = v.encode("utf-8")
    return (_uvarint(len(raw) + 1) if flexible else _I16.pack(len(raw))) + raw


def _count(n: int | None, flexible: bool) -> bytes:
    """An array length; None is the null array (-1, or 0 in compact form)."""
    if flexible:
        return _uvarint(0 if n is None else n + 1)
    return _I32.pack(-1 if n is None else n)


def encode_key(transactional_id: str) -> bytes:
    return _I16.pack(KEY_VERSION) + _string(transactional_id, flexible=False)


def _by_topic(partitions: Iterable[tuple[str, int]]) -> list[tuple[str, list[int]]]:
    topics: dict[str, list[int]] = {}
    for topic, partition in partitions:
        topics.setdefault(topic, []).append(partition)
    return [(t, sorted(ps)) for t, ps in sorted(topics.items())]


def encode_value(value: TxnLogValue, version: int = VALUE_VERSION) -> bytes:
    """Value v0 (what is written) or v1 (flexible, empty tagged fields)."""
    if version not in (0, 1):
        raise ValueError(f"TransactionLogValue v{version} does not exist")
    flexible = version >= 1
    parts = [
        _I16.pack(version),
        _I64.pack(value.producer_id),
        _I16.pack(value.producer_epoch),
        _I32.pack(value.timeout_ms),
        _I8.pack(value.state_id),
    ]
    if value.partitions is None:
        parts.append(_count(None, flexible))
    else:
        topics = _by_topic(value.partitions)
        parts.append(_count(len(topics), flexible))
        for topic, ids in topics:
            parts.append(_string(topic, flexible))
            parts.append(_count(len(ids), flexible))
            parts.extend(_I32.pack(p) for p in ids)
            if flexible:
                parts.append(_uvarint(0))
    parts.append(_I64.pack(value.last_update_timestamp))
    parts.append(_I64.pack(value.start_timestamp))
    if flexible:
        parts.append(_uvarint(0))
    return b"".join(parts)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.flexible = False

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise TxnRecordFormatError("record shorter than its fields")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def fixed(self, s: struct.Struct) -> int:
        return int(s.unpack(self.take(s.size))[0])

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise TxnRecordFormatError("varint too long")

    def string(self) -> str:
        n = self.uvarint() - 1 if self.flexible else self.fixed(_I16)
        if n < 0:
            raise TxnRecordFormatError("null where a string is required")
        try:
            return self.take(n).decode("utf-8")
        except UnicodeDecodeError as e:
            raise TxnRecordFormatError(str(e)) from e

    def count(self) -> int:
        """An array length, -1 for null."""
        return self.uvarint() - 1 if self.flexible else self.fixed(_I32)

    def tags(self) -> None:
        if self.flexible:
            for _ in range(self.uvarint()):
                self.uvarint()
                self.take(self.uvarint())

    def end(self) -> None:
        if self.pos != len(self.data):
            raise TxnRecordFormatError("bytes left after the record's fields")


def decode_key(data: bytes) -> str | None:
    """The transactional id; None for a key version the transaction log does not use."""
    r = _Reader(data)
    if r.fixed(_I16) != KEY_VERSION:
        return None
    transactional_id = r.string()
    r.end()
    return transactional_id


def decode_value(data: bytes | None) -> TxnLogValue | None:
    """None for a tombstone; otherwise the stored state (Kafka's ``readTxnRecordValue``)."""
    if data is None:
        return None
    r = _Reader(data)
    version = r.fixed(_I16)
    if version not in (0, 1):
        # Kafka: IllegalStateException("Unknown version ... from the transaction log message value")
        raise TxnRecordFormatError(
            f"Unknown version {version} from the transaction log message value"
        )
    r.flexible = version >= 1
    producer_id = r.fixed(_I64)
    epoch = r.fixed(_I16)
    timeout = r.fixed(_I32)
    state_id = r.fixed(_I8)
    n_topics = r.count()
    found: set[tuple[str, int]] = set()
    for _ in range(max(n_topics, 0)):
        topic = r.string()
        n_ids = r.count()
        if n_ids < 0:
            raise TxnRecordFormatError("null partition list")
        found.update((topic, r.fixed(_I32)) for _ in range(n_ids))
        r.tags()
    last_update = r.fixed(_I64)
    start = r.fixed(_I64)
    r.tags()
    r.end()
    return TxnLogValue(
        producer_id,
        epoch,
        timeout,
        state_id,
        None if n_topics < 0 else frozenset(found),
        last_update,
        start,
    )


def value_of(transit: TxnTransit) -> TxnLogValue:
    """What ``valueToBytes`` stores for a transit: null partitions when Empty."""
    if transit.state is TxnState.EMPTY and transit.partitions:
        raise ValueError(
            "Transaction is not expected to have any partitions since its state is Empty"
        )
    return TxnLogValue(
        transit.producer_id,
        transit.producer_epoch,
        transit.timeout_ms,
        transit.state.value,
        None if transit.state is TxnState.EMPTY else transit.partitions,
        transit.last_update_timestamp,
        transit.start_timestamp,
    )


def metadata_of(transactional_id: str, value: TxnLogValue) -> TxnMetadata:
    """``readTxnRecordValue``: the last producer id and epoch are not stored (v0), so a loaded
    id has none; partitions count only outside Empty."""
    state = TxnState.from_id(value.state_id)
    partitions = set(value.partitions or ()) if state is not TxnState.EMPTY else set()
    return TxnMetadata(
        transactional_id,
        value.producer_id,
        value.timeout_ms,
        value.last_update_timestamp,
        state=state,
        producer_epoch=value.producer_epoch,
        partitions=partitions,
        start_timestamp=value.start_timestamp,
    )
