"""The timestamps of an uncompressed v2 batch's records, read by aiokafka's C record reader.

Validating a produce request needs every record's timestamp (the batch's max timestamp and
its offset, and the timestamp window), and Kafka reads each record to get them
(`DefaultRecord.readFrom`). In Python that read is most of the produce path's cost (about
2 ms per 1,000 records); aiokafka's Cython reader (`aiokafka.record._crecords`) does it in
about 0.2 ms with the same structural checks: each record's length against what it holds,
negative header counts, the record count against the bytes, nothing left over.

`record_timestamps` is only a fast path: it answers None whenever it cannot vouch for the
batch (the C reader is not installed, the batch is compressed, the reader raises anything),
and the caller then runs the exact reader (`RecordBatchV2.records`), which raises Kafka's
error with Kafka's message. So an invalid batch is always judged by the exact reader.

Deliberately not here: keys, values and headers (the callers that need them use the exact
reader), compressed batches, legacy message sets.
"""

from __future__ import annotations

import importlib
from typing import Any

from broker.protocol.records.batch_v2 import RecordBatchV2
from broker.protocol.records.constants import CompressionType


def _compiled_reader() -> Any:
    # The compiled reader only: aiokafka's pure-Python fallback would be slower than ours.
    try:
        module = importlib.import_module("aiokafka.record._crecords.default_records")
    except ImportError:  # pragma: no cover - depends on the platform's wheel
        return None
    return getattr(module, "DefaultRecordBatch", None)


_CBatch: Any = _compiled_reader()


def available() -> bool:
    return _CBatch is not None


def record_timestamps(batch: RecordBatchV2) -> list[int] | None:
    """Every record's timestamp in order, or None: use the exact reader."""
    if _CBatch is None or batch.compression != CompressionType.NONE:
        return None
    try:
        reader = _CBatch(bytes(batch.buffer))
        stamps = [record.timestamp for record in reader]
    except Exception:
        return None
    if len(stamps) != batch.records_count:
        return None
    return stamps
