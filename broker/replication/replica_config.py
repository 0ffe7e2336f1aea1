"""The replica settings a broker's replication reads (Kafka's ``replica.*`` configs).

Read from the broker's effective config (static, dynamic and the release's defaults,
`zkbroker.broker.rules.broker_config`) each time a fetcher or timer needs them, so a dynamic
change applies at the next fetch. Not here: min.insync.replicas (a topic config, the produce
path's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from zkbroker.broker.rules.broker_config import configured_int


@dataclass(frozen=True, slots=True)
class ReplicaConfig:
    lag_time_max_ms: int = 30_000
    fetch_wait_max_ms: int = 500
    fetch_min_bytes: int = 1
    fetch_max_bytes: int = 1_048_576
    fetch_response_max_bytes: int = 10_485_760
    fetch_backoff_ms: int = 1_000
    high_watermark_checkpoint_interval_ms: int = 5_000

    @classmethod
    def read(cls, configured: Callable[[str], str | None]) -> ReplicaConfig:
        d = cls()
        return cls(
            lag_time_max_ms=configured_int(
                configured, "replica.lag.time.max.ms", d.lag_time_max_ms
            ),
            fetch_wait_max_ms=configured_int(
                configured, "replica.fetch.wait.max.ms", d.fetch_wait_max_ms
            ),
            fetch_min_bytes=configured_int(
                configured, "replica.fetch.min.bytes", d.fetch_min_bytes
            ),
            fetch_max_bytes=configured_int(
                configured, "replica.fetch.max.bytes", d.fetch_max_bytes
            ),
            fetch_response_max_bytes=configured_int(
                configured, "replica.fetch.response.max.bytes", d.fetch_response_max_bytes
            ),
            fetch_backoff_ms=configured_int(
                configured, "replica.fetch.backoff.ms", d.fetch_backoff_ms
            ),
            high_watermark_checkpoint_interval_ms=configured_int(
                configured,
                "replica.high.watermark.checkpoint.interval.ms",
                d.high_watermark_checkpoint_interval_ms,
            ),
        )
