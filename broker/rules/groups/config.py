"""What the classic group coordinator's decisions are given by their owner: the broker configs
they read (``GroupConfig``, built by `group_config`: Kafka's GroupConfig / OffsetConfig) and how
they hand records of ``__consumer_offsets`` to the log (``Writer``, ``TxnWriter``).
docs/kafka-behaviour.md §16 names the configs and their defaults.

Deliberately not here: the decisions (``zkbroker.broker.rules.groups.membership``,
``zkbroker.broker.rules.groups.offsets``), the broker config table (``zkbroker.broker.rules``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from zkbroker.broker.rules.broker_config import configured_int
from zkbroker.broker.rules.groups.classic_group import ClassicGroup
from zkbroker.zk_layout.release import Release

OFFSET_METADATA_MAX_BYTES = 4096

# A key and value appended to a coordinator topic (a null value is a tombstone): Kafka's
# CoordinatorRecord, not a record of a record batch (`zkbroker.broker.protocol.records`).
CoordinatorRecord = tuple[bytes, bytes | None]
Writer = Callable[[str, Sequence[CoordinatorRecord]], int]
# (group id, records, producer id, producer epoch) -> error code: a transactional batch.
TxnWriter = Callable[[str, Sequence[CoordinatorRecord], int, int], int]


@dataclass(frozen=True)
class GroupConfig:
    """The broker configs the coordinator reads (Kafka's GroupConfig / OffsetConfig)."""

    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2147483647
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offsets_retention_check_interval_ms: int = 600000
    offset_metadata_max_bytes: int = OFFSET_METADATA_MAX_BYTES
    #: How long an offset commit waits for the ISR, and whether it does (-1; 1 answers after
    #: the leader's append; the setting is gone in 4.0, where it is always -1).
    offsets_commit_timeout_ms: int = 5000
    offsets_commit_required_acks: int = -1


class GroupsSide:
    """What both sides of the coordinator's decisions read (membership and offsets, the bases
    of ``zkbroker.broker.rules.groups.state_machine.GroupStateMachine``): the groups of the
    partitions one coordinator owns (one group object holds both sides' state), the configs
    (replaced when the broker's change), the emulated release and how records reach
    ``__consumer_offsets``."""

    def __init__(self, config: GroupConfig, release: Release, write: Writer) -> None:
        self.groups: dict[str, ClassicGroup] = {}
        self.config = config
        self.release = release
        self._write = write


def group_config(value: Callable[[str], str | None]) -> GroupConfig:
    """The coordinator's settings from a broker config lookup (``BrokerConfig.configured``);
    a key the release lacks keeps Kafka's default."""

    def num(name: str, default: int) -> int:
        return configured_int(value, name, default)

    base = GroupConfig()
    return GroupConfig(
        min_session_timeout_ms=num("group.min.session.timeout.ms", base.min_session_timeout_ms),
        max_session_timeout_ms=num("group.max.session.timeout.ms", base.max_session_timeout_ms),
        # Absent before 0.11 (KIP-134): those releases rebalance at once.
        initial_rebalance_delay_ms=num("group.initial.rebalance.delay.ms", 0),
        max_size=num("group.max.size", base.max_size),
        offsets_retention_ms=num("offsets.retention.minutes", 10080) * 60 * 1000,
        offsets_retention_check_interval_ms=num(
            "offsets.retention.check.interval.ms", base.offsets_retention_check_interval_ms
        ),
        offset_metadata_max_bytes=num("offset.metadata.max.bytes", OFFSET_METADATA_MAX_BYTES),
        offsets_commit_timeout_ms=num("offsets.commit.timeout.ms", base.offsets_commit_timeout_ms),
        offsets_commit_required_acks=num(
            "offsets.commit.required.acks", base.offsets_commit_required_acks
        ),
    )
