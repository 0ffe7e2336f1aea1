"""Split a produce payload (Kafka's MemoryRecords) into batches, lazily.

Follows Kafka's ``ByteBufferLogInputStream``: each entry is sized from its int32 length
(CORRUPT_MESSAGE below the 14-byte minimum overhead), its magic byte chooses the format
(CORRUPT_MESSAGE outside 0..2), and a partial entry at the end stops the iteration: Kafka
trims those bytes rather than failing, so ``valid_bytes`` tells the caller where the last
whole batch ends. Only each batch's header is parsed here.

Deliberately not here: validation (``zkbroker.broker.rules.log_validation``), record decoding
(``RecordBatchV2.records`` / ``LegacyEntry.records``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from zkbroker.broker.protocol.records.batch_v2 import RecordBatchV2
from zkbroker.broker.protocol.records.constants import (
    HEADER_SIZE_UP_TO_MAGIC,
    LEGACY_RECORD_OVERHEAD_V0,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V1,
    MAGIC_V2,
)
from zkbroker.broker.protocol.records.errors import CorruptRecordError
from zkbroker.broker.protocol.records.legacy import LegacyEntry

Batch = RecordBatchV2 | LegacyEntry

_I32 = struct.Struct(">i")


def iter_batches(payload: bytes | memoryview) -> Iterator[Batch]:
    """Each whole batch of ``payload`` in order, header parsed, records untouched."""
    mv = memoryview(payload)
    end = len(mv)
    pos = 0
    while True:
        size = _next_batch_size(mv, pos, end)
        if size is None or end - pos < size:
            return
        magic = mv[pos + MAGIC_OFFSET]
        batch_bytes = mv[pos : pos + size]
        yield RecordBatchV2(batch_bytes) if magic > MAGIC_V1 else LegacyEntry(batch_bytes)
        pos += size


def read_batches(payload: bytes | memoryview) -> tuple[list[Batch], int]:
    """All whole batches and the number of bytes they cover (the rest is a partial entry)."""
    batches = list(iter_batches(payload))
    return batches, sum(b.size_in_bytes for b in batches)


def _next_batch_size(mv: memoryview, pos: int, end: int) -> int | None:
    remaining = end - pos
    if remaining < LOG_OVERHEAD:
        return None
    (record_size,) = _I32.unpack_from(mv, pos + 8)
    if record_size < LEGACY_RECORD_OVERHEAD_V0:
        raise CorruptRecordError(
            f"Record size {record_size} is less than the minimum record overhead "
            f"({LEGACY_RECORD_OVERHEAD_V0})"
        )
    if remaining < HEADER_SIZE_UP_TO_MAGIC:
        return None
    magic = struct.unpack_from(">b", mv, pos + MAGIC_OFFSET)[0]
    if magic < 0 or magic > MAGIC_V2:
        raise CorruptRecordError(f"Invalid magic found in record: {magic}")
    return int(record_size) + LOG_OVERHEAD
