"""The process's log retention task: old segments deleted and compacted logs cleaned.

Kafka's `LogManager.cleanupLogs` runs every `log.retention.check.interval.ms` (5 minutes by
default) and deletes, per log, the segments past `retention.ms` and those beyond
`retention.bytes`, for topics whose `cleanup.policy` includes `delete`
(docs/kafka-behaviour.md §15). Kafka's `LogCleaner` threads compact the logs whose policy
includes `compact` (and then apply retention to `compact,delete` ones). Here one task does
both for every log of the process, in that order, with each topic's effective config (its
overrides over the first running broker's defaults: the brokers of one process share their
static configuration); cleaning only while `log.cleaner.enable` (default true) holds.

Deliberately not here: Kafka's cleaner threads and `log.cleaner.backoff.ms` (cleaning follows
the retention interval), `log.cleaner.io.max.bytes.per.second`, and how a log is cleaned or
what a segment is (`zkbroker.broker.storage`, `zkbroker.broker.storage.cleaner`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from zkbroker.broker.asyncutil import Pacer, cancel_and_wait
from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.log import get_logger
from zkbroker.broker.rules.broker_config import BrokerConfig
from zkbroker.broker.storage import LogManager, PartitionLog
from zkbroker.broker.storage.cleaner import CompactionConfig, clean_log
from zkbroker.handlers.support.log_config import TopicLogConfig, effective_log_config
from zkbroker.zk_layout import Release

CHECK_INTERVAL_KEY = "log.retention.check.interval.ms"
CLEANER_ENABLE_KEY = "log.cleaner.enable"
DEFAULT_CHECK_INTERVAL_MS = 300_000


class LogRetention:
    def __init__(
        self,
        logs: list[LogManager],
        image: MetadataImage,
        release: Release,
        broker_config: Callable[[], BrokerConfig | None],
    ) -> None:
        self._logs = logs
        self._image = image
        self._release = release
        self._broker_config = broker_config
        self._task: asyncio.Task[None] | None = None
        self._log = get_logger(__name__)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="log-retention")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            await cancel_and_wait([task], what="log_retention", log=self._log)

    def _interval_s(self) -> float:
        config = self._broker_config()
        value = None if config is None else config.value(CHECK_INTERVAL_KEY)
        try:
            ms = int(value) if value is not None else DEFAULT_CHECK_INTERVAL_MS
        except ValueError:
            ms = DEFAULT_CHECK_INTERVAL_MS
        return max(ms, 1) / 1000

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s())
            try:
                await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                self._log.exception("log_retention.failed")

    async def run_once(self) -> int:
        """One pass over every log; returns the bytes freed."""
        config = self._broker_config()
        if config is None:
            return 0
        now_ms = int(time.time() * 1000)
        cleaner_enabled = (config.value(CLEANER_ENABLE_KEY) or "true").lower() != "false"
        pacer = Pacer()
        freed = 0
        for log in [log for logs in self._logs for log in logs.logs()]:
            if pacer.due():
                await pacer.pause()
            overrides = await self._image.topic_configs.overrides(log.topic)
            effective = effective_log_config(log.topic, overrides, config, self._release)
            # Logs no handler opened (the group coordinator's `__consumer_offsets`) learn
            # their topic's roll configs here, as a Kafka log's config follows its topic.
            log.segment_bytes = effective.segment_bytes
            log.segment_ms = effective.segment_ms
            if cleaner_enabled and "compact" in effective.cleanup_policy:
                await self._clean(log, effective, now_ms, pacer)
            if "delete" not in effective.cleanup_policy or log.closed:
                continue
            freed += log.apply_retention(
                now_ms,
                retention_ms=effective.retention_ms,
                retention_bytes=effective.retention_bytes,
            )
        if freed:
            self._log.info("log_retention.deleted", bytes=freed)
        return freed

    async def _clean(
        self, log: PartitionLog, effective: TopicLogConfig, now_ms: int, pacer: Pacer
    ) -> None:
        compaction = CompactionConfig(
            min_cleanable_ratio=effective.min_cleanable_dirty_ratio,
            delete_retention_ms=effective.delete_retention_ms,
            min_compaction_lag_ms=effective.min_compaction_lag_ms,
            max_compaction_lag_ms=effective.max_compaction_lag_ms,
            segment_bytes=effective.segment_bytes,
            max_index_bytes=effective.segment_index_bytes,
        )
        try:
            await clean_log(log, compaction, now_ms, pacer=pacer)
        except asyncio.CancelledError:
            raise
        except Exception:
            # Kafka marks the partition uncleanable and goes on with the others.
            self._log.exception("log_cleaner.failed", topic=log.topic, partition=log.partition)
