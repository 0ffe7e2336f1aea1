"""Down-conversion of stored batches for Fetch v0-v3 clients (magic 0 and 1 readers).

Follows Kafka's `RecordsUtil.downConvert` as `KafkaApis` applies it to old fetchers
(docs/kafka-behaviour.md §15): each magic 2 batch is rewritten as a message set of the
client's magic with the batch's compression and timestamp type; records before the fetch
offset in the first batch are dropped; control batches (transaction markers) are left out, an
old client could not read them; batches already at or below the client's magic are kept as
stored.

Deliberately not here: the size limits of the response (the caller read whole batches within
them; a converted set may come out a little larger, as in Kafka), and zstd, which Fetch below
v10 refuses before reading (`zkbroker.handlers.fetch`).
"""

from __future__ import annotations

from zkbroker.broker.protocol.records import (
    MAGIC_V2,
    NewRecord,
    RecordBatchV2,
    encode_message_set,
    iter_batches,
)


def down_convert(records: bytes, *, magic: int, start: int) -> bytes:
    parts: list[bytes] = []
    for batch in iter_batches(records):
        if batch.magic <= magic:
            parts.append(bytes(batch.buffer))
            continue
        assert isinstance(batch, RecordBatchV2) and batch.magic == MAGIC_V2
        if batch.is_control:
            continue
        converted = [
            NewRecord(offset=r.offset, timestamp=r.timestamp, key=r.key, value=r.value)
            for r in batch.records()
            if r.offset >= start
        ]
        if converted:
            parts.append(
                encode_message_set(
                    converted,
                    magic=magic,
                    compression=batch.compression,
                    timestamp_type=batch.timestamp_type,
                    log_append_time=batch.max_timestamp,
                )
            )
    return b"".join(parts)
