"""Partition log storage: the data plane's logs, in memory or in Kafka's on-disk layout.

- `LogManager`: the partition logs of one broker (in memory or its own log dir), topic
  deletion, retention passes, high watermark checkpoints, and `LogManager.wait_for_append`
  for long-polling fetches.
- `PartitionLog`: one replica's log: append as leader or follower, read (up to a high
  watermark), the high watermark, truncation, lookups by timestamp and leader epoch,
  DeleteRecords, retention.
- `log_dirs_of`: each broker's log dir under a ``--log-dir`` root (the root itself for a
  process of one broker, ``broker-N`` for several), adopting the layout written when every
  broker shared one log per partition.
- `OffsetOutOfRange`, `TimestampOffset`: what reads and lookups raise and return.
- `cleaner` (imported by its users, not re-exported): log compaction, Kafka's LogCleaner.
- `transactions` (imported by its users): each log's ongoing and aborted transactions, the
  last stable offset (``PartitionLog.transactions``), and writing an end marker.

Follows Kafka's ``UnifiedLog``, ``LocalLog``, ``LogSegment``, ``LeaderEpochFileCache``,
``LogManager``, ``OffsetCheckpointFile``, ``PartitionMetadataFile`` and ``LogCleaner`` (see
each module). Deliberately not here: the replica manager and fetcher (when the high watermark
moves, what a follower fetches), the transaction coordinator, tiered storage, and the API
rules (``handlers``). Imports only ``zkbroker.broker.protocol`` (records),
``zkbroker.broker.rules`` (producer state), ``zkbroker.broker.asyncutil`` (slicing the cleaner's
work), ``zk_layout`` (the Uuid text form), structlog and the standard library.
"""

from __future__ import annotations

from zkbroker.broker.storage.log_dir_layout import log_dirs_of
from zkbroker.broker.storage.log_manager import LogManager
from zkbroker.broker.storage.partition_log import PartitionLog
from zkbroker.broker.storage.types import LogDirInUse, OffsetOutOfRange, TimestampOffset

__all__ = [
    "LogDirInUse",
    "LogManager",
    "OffsetOutOfRange",
    "PartitionLog",
    "TimestampOffset",
    "log_dirs_of",
]
