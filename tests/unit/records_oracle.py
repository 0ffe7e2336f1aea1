"""kafka-python as the independent oracle for the record-format tests.

Its pure-Python builders and readers (``kafka.record``) are a second implementation of
Kafka's formats: bytes they build must decode, bytes we build must read back. Its codecs
need python-snappy, lz4 and zstandard (the dev extras); a codec it lacks is skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from kafka import codec as kafka_codec
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4

_AVAILABLE = {
    0: lambda: True,
    GZIP: kafka_codec.has_gzip,
    SNAPPY: kafka_codec.has_snappy,
    LZ4: kafka_codec.has_lz4,
    ZSTD: kafka_codec.has_zstd,
}


def require_codec(codec: int) -> None:
    if not _AVAILABLE[codec]():
        pytest.skip(f"kafka-python lacks the library for codec {codec}")


# (timestamp, key, value, headers)
Spec = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def kp_v2_batch(
    specs: Sequence[Spec],
    codec: int = 0,
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
) -> bytes:
    require_codec(codec)
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 30,
    )
    for i, (ts, key, value, headers) in enumerate(specs):
        builder.append(i, timestamp=ts, key=key, value=value, headers=headers)
    return bytes(builder.build())


def kp_legacy(specs: Sequence[Spec], magic: int, codec: int = 0) -> bytes:
    require_codec(codec)
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 30)
    for i, (ts, key, value, _) in enumerate(specs):
        builder.append(i, timestamp=ts, key=key, value=value)
    return bytes(builder.build())


def kp_read_all(data: bytes) -> list[dict[str, Any]]:
    """Every record of a payload as kafka-python reads it, CRCs checked."""
    out = []
    records = MemoryRecords(data)
    while records.has_next():
        batch = records.next_batch()
        if isinstance(batch, DefaultRecordBatch):
            assert batch.validate_crc()
        for record in batch:
            if not isinstance(batch, DefaultRecordBatch):
                assert record.validate_crc()
            out.append(
                {
                    "offset": record.offset,
                    "timestamp": record.timestamp,
                    "timestamp_type": record.timestamp_type,
                    "key": record.key,
                    "value": record.value,
                    "headers": [(k, v) for k, v in record.headers],
                }
            )
    return out
