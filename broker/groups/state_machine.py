"""The classic group coordinator's decisions, as pure code with the time passed in: one object
over the two sides of a group, as Kafka's coordinator shard holds its two managers.

* membership (``zkbroker.broker.groups.membership``): JoinGroup, SyncGroup, Heartbeat,
  LeaveGroup, the rebalance and member expiry, the group's own record;
* offsets (``zkbroker.broker.groups.offsets``): OffsetCommit, TxnOffsetCommit and its
  transaction's end, OffsetFetch, OffsetDelete, DeleteGroups, offset expiry.

Both share one ``ClassicGroup`` per group id; this object dispatches the log's records to them
while loading (`replay`) and tells both when the partition moves away (`unload`). Follows
Kafka 3.9's ``GroupCoordinator.scala`` and ``GroupMetadataManager``: docs/kafka-behaviour.md
§16 (transactional offsets §17). Writes go through ``write``: the group's records (key, value
or None for a tombstone) for the caller to append to the group's partition of
``__consumer_offsets``; it answers an error code (NONE when appended).

Deliberately not here: whether this broker coordinates a group or is loading it (the caller
checks first: Kafka's validateGroupStatus), the wire, the log, timers and tasks
(``zkbroker.broker.groups.coordinator``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from zkbroker.broker.groups import records as rec
from zkbroker.broker.groups.classic_group import (
    ClassicGroup,
    CommittedOffset,
    JoinCallback,
    SyncCallback,
    TopicPartition,
)
from zkbroker.broker.groups.config import (
    OFFSET_METADATA_MAX_BYTES,
    GroupConfig,
    Record,
    TxnWriter,
    Writer,
    group_config,
)
from zkbroker.broker.groups.membership import (
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    UNKNOWN_MEMBER_ID,
    GroupMembership,
)
from zkbroker.broker.groups.offsets import GroupOffsets
from zkbroker.broker.log import get_logger
from zkbroker.zk_layout.release import Release

# Importable from here as before the split.
__all__ = [
    "NEW_MEMBER_JOIN_TIMEOUT_MS",
    "OFFSET_METADATA_MAX_BYTES",
    "UNKNOWN_MEMBER_ID",
    "GroupConfig",
    "GroupStateMachine",
    "Record",
    "TxnWriter",
    "Writer",
    "group_config",
]

_log = get_logger(__name__)


class GroupStateMachine:
    """Every classic group of the partitions one coordinator owns."""

    def __init__(self, config: GroupConfig, release: Release, write: Writer) -> None:
        self.release = release
        self.groups: dict[str, ClassicGroup] = {}
        self.membership = GroupMembership(self.groups, config, release, write)
        self.offsets = GroupOffsets(self.groups, config, release, write)
        self.pending_txn = self.offsets.pending_txn

    @property
    def config(self) -> GroupConfig:
        return self.membership.config

    @config.setter
    def config(self, config: GroupConfig) -> None:
        self.membership.config = config
        self.offsets.config = config

    @property
    def write_txn(self) -> TxnWriter | None:
        """How a TxnOffsetCommit's records are appended (set by the coordinator)."""
        return self.offsets.write_txn

    @write_txn.setter
    def write_txn(self, write_txn: TxnWriter | None) -> None:
        self.offsets.write_txn = write_txn

    # ---- membership ----------------------------------------------------------------------

    def group(self, group_id: str) -> ClassicGroup | None:
        return self.membership.group(group_id)

    def join(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        *,
        require_known_member_id: bool,
        support_skip_assignment: bool,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        reason: str | None,
        now: int,
        callback: JoinCallback,
    ) -> None:
        self.membership.join(
            group_id,
            member_id,
            instance_id,
            require_known_member_id=require_known_member_id,
            support_skip_assignment=support_skip_assignment,
            client_id=client_id,
            client_host=client_host,
            rebalance_timeout_ms=rebalance_timeout_ms,
            session_timeout_ms=session_timeout_ms,
            protocol_type=protocol_type,
            protocols=protocols,
            reason=reason,
            now=now,
            callback=callback,
        )

    def sync(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        protocol_type: str | None,
        protocol_name: str | None,
        instance_id: str | None,
        assignments: Mapping[str, bytes],
        now: int,
        callback: SyncCallback,
    ) -> None:
        self.membership.sync(
            group_id,
            generation_id,
            member_id,
            protocol_type,
            protocol_name,
            instance_id,
            assignments,
            now,
            callback,
        )

    def heartbeat(
        self, group_id: str, member_id: str, instance_id: str | None, generation_id: int, now: int
    ) -> int:
        return self.membership.heartbeat(group_id, member_id, instance_id, generation_id, now)

    def leave(
        self, group_id: str, leaving: Sequence[tuple[str, str | None, str | None]], now: int
    ) -> tuple[int, list[int]]:
        """(top-level error, per leaving (member id, instance id, reason) error)."""
        return self.membership.leave(group_id, leaving, now)

    @staticmethod
    def next_deadline(group: ClassicGroup) -> int | None:
        return GroupMembership.next_deadline(group)

    def tick(self, group_id: str, now: int) -> None:
        """Run every deadline of the group that has passed (Kafka's purgatory expirations)."""
        self.membership.tick(group_id, now)

    # ---- offsets -------------------------------------------------------------------------

    def commit_offsets(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        generation_id: int,
        offsets: Mapping[TopicPartition, CommittedOffset],
        now: int,
    ) -> dict[TopicPartition, int]:
        return self.offsets.commit_offsets(
            group_id, member_id, instance_id, generation_id, offsets, now
        )

    def commit_txn_offsets(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str,
        instance_id: str | None,
        generation_id: int,
        offsets: Mapping[TopicPartition, CommittedOffset],
        now: int,
    ) -> dict[TopicPartition, int]:
        return self.offsets.commit_txn_offsets(
            group_id,
            producer_id,
            producer_epoch,
            member_id,
            instance_id,
            generation_id,
            offsets,
            now,
        )

    def complete_txn(
        self, producer_id: int, commit: bool, in_partition: Callable[[str], bool], now: int
    ) -> list[str]:
        return self.offsets.complete_txn(producer_id, commit, in_partition, now)

    def unstable_offset(self, group_id: str, tp: TopicPartition) -> bool:
        """Whether OffsetFetch with require_stable must answer UNSTABLE_OFFSET_COMMIT."""
        return self.offsets.unstable_offset(group_id, tp)

    def fetch_offsets(
        self, group_id: str, wanted: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, CommittedOffset | None]:
        return self.offsets.fetch_offsets(group_id, wanted)

    def delete_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition], now: int
    ) -> tuple[int, dict[TopicPartition, int]]:
        """KIP-496's OffsetDelete: (group error, per partition error)."""
        return self.offsets.delete_offsets(group_id, partitions, now)

    def delete_groups(self, group_ids: Sequence[str], now: int) -> dict[str, int]:
        return self.offsets.delete_groups(group_ids, now)

    def expire_offsets(self, now: int) -> int:
        """Kafka's cleanupGroupMetadata with removeExpiredOffsets; the number removed."""
        return self.offsets.expire_offsets(now)

    # ---- loading and unloading the partition ---------------------------------------------

    def replay(
        self, key: bytes, value: bytes | None, now: int, producer_id: int | None = None
    ) -> None:
        """Apply one record of the log (GroupMetadataManager.doLoadGroupsAndOffsets); a group
        that ends with members is Stable, its members' sessions restarting now. An offset of a
        transactional batch (`producer_id`) stays pending until its marker is replayed."""
        try:
            decoded = rec.decode_key(key)
            if isinstance(decoded, rec.OffsetKey):
                self.offsets.replay(decoded, value, now, producer_id)
            elif isinstance(decoded, rec.GroupKey):
                self.membership.replay(decoded, value, now)
        except rec.RecordFormatError as e:
            _log.warning("group.unreadable_record", reason=str(e))

    def loaded(self, group_ids: Iterable[str], now: int) -> None:
        """After a load: every member's session starts now (Kafka's onGroupLoaded)."""
        self.membership.loaded(group_ids, now)

    def unload(self, group_ids: Iterable[str]) -> None:
        """The partition moved away: waiting members learn NOT_COORDINATOR (Kafka's
        onGroupUnloaded) and the groups are forgotten here."""
        group_ids = list(group_ids)
        self.offsets.unload(group_ids)
        self.membership.unload(group_ids)
