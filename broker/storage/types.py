"""The storage layer's value types and its one error.

- `OffsetOutOfRange`: a read or DeleteRecords names an offset outside [log start, log end]
  (Kafka's ``OffsetOutOfRangeException``; the handler answers OFFSET_OUT_OF_RANGE).
- `TimestampOffset`: what a ListOffsets lookup by timestamp finds (Kafka's
  ``FileRecords.TimestampAndOffset``), the leader epoch -1 when the batch carries none.

Deliberately not here: error codes or messages of the wire (``zkbroker.broker.rules.api_error``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: Kafka's ``RecordBatch.NO_PARTITION_LEADER_EPOCH`` / ``UNDEFINED_EPOCH``.
UNDEFINED_EPOCH: Final = -1
#: Kafka's ``OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH_OFFSET``.
UNDEFINED_EPOCH_OFFSET: Final = -1


class LogDirInUse(Exception):
    """Another process (or broker) holds the log dir's lock (Kafka's message)."""

    def __init__(self, log_dir: str) -> None:
        super().__init__(
            f"Failed to acquire lock on file .lock in {log_dir}. A Kafka instance in another "
            "process or thread is using this directory."
        )


class OffsetOutOfRange(Exception):
    """The offset is below the log start offset or above the log end offset."""

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int) -> None:
        super().__init__(
            f"Offset {offset} is out of range: the log holds [{log_start_offset}, {log_end_offset})"
        )
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


@dataclass(frozen=True, slots=True)
class TimestampOffset:
    """A record found by timestamp: its offset, its timestamp and its batch's leader epoch."""

    offset: int
    timestamp: int
    leader_epoch: int = UNDEFINED_EPOCH
