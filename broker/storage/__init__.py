"""Partition log storage: the data plane's logs, in memory or in Kafka's on-disk layout.

- `LogManager`: every partition log of a process (shared by all its brokers), topic
  deletion, retention passes, and `LogManager.wait_for_append` for long-polling fetches.
- `PartitionLog`: one partition's segments: append, read, lookups by timestamp and leader
  epoch, DeleteRecords, retention.
- `OffsetOutOfRange`, `TimestampOffset`: what reads and lookups raise and return.
- `cleaner` (imported by its users, not re-exported): log compaction, Kafka's LogCleaner.
- `transactions` (imported by its users): each log's ongoing and aborted transactions, the
  last stable offset (``PartitionLog.transactions``), and writing an end marker.

Follows Kafka's ``UnifiedLog``, ``LocalLog``, ``LogSegment``, ``LeaderEpochFileCache``,
``LogManager``, ``OffsetCheckpointFile``, ``PartitionMetadataFile`` and ``LogCleaner`` (see
each module). Deliberately not here: replication, the transaction coordinator, tiered storage,
and the API rules (``handlers``). Imports only ``zkbroker.broker.protocol`` (records),
``zkbroker.broker.rules`` (producer state), ``zkbroker.broker.asyncutil`` (slicing the cleaner's
work), ``zk_layout`` (the Uuid text form), structlog and the standard library.
"""

from __future__ import annotations

from zkbroker.broker.storage.log_manager import LogManager
from zkbroker.broker.storage.partition_log import PartitionLog
from zkbroker.broker.storage.types import OffsetOutOfRange, TimestampOffset

__all__ = ["LogManager", "OffsetOutOfRange", "PartitionLog", "TimestampOffset"]
