"""The transaction coordinator's settings, read from the broker's configuration.

Kafka's ``TransactionConfig`` (``KafkaConfig.transaction*``): the log's partition count, the
maximum transaction timeout, the abort and expiry intervals and ``transactional.id``'s
expiration (docs/kafka-behaviour.md §17). A key the broker does not set keeps Kafka's default
for the emulated release (the abort interval was 60 s before 2.5, 10 s since: KAFKA-9144).

Deliberately not here: validating values (``zkbroker.broker.rules.broker_config_validation`` does it
when they are set), the topic's own configs (``zkbroker.handlers.support.internal_topics``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from zkbroker.broker.rules.broker_config import configured_int
from zkbroker.zk_layout.release import Release, release_at_least


@dataclass(frozen=True, slots=True)
class TxnConfig:
    num_partitions: int = 50
    max_timeout_ms: int = 900_000
    abort_interval_ms: int = 10_000
    remove_expired_interval_ms: int = 3_600_000
    id_expiration_ms: int = 604_800_000
    #: How long a transaction log append waits for the ISR (the broker's request.timeout.ms).
    request_timeout_ms: int = 30_000


def txn_config(value: Callable[[str], str | None], release: Release) -> TxnConfig:
    """The settings from a broker config lookup (``BrokerConfig.configured``)."""

    def num(name: str, default: int) -> int:
        return configured_int(value, name, default)

    base = TxnConfig()
    abort_default = base.abort_interval_ms if release_at_least(release, (2, 5)) else 60_000
    return TxnConfig(
        num_partitions=num("transaction.state.log.num.partitions", base.num_partitions),
        max_timeout_ms=num("transaction.max.timeout.ms", base.max_timeout_ms),
        abort_interval_ms=num(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms", abort_default
        ),
        remove_expired_interval_ms=num(
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            base.remove_expired_interval_ms,
        ),
        id_expiration_ms=num("transactional.id.expiration.ms", base.id_expiration_ms),
        request_timeout_ms=num("request.timeout.ms", base.request_timeout_ms),
    )
