"""The classic group coordinator's decisions, as pure code with the time passed in: one object
over the two sides of a group, as Kafka's coordinator shard holds its two managers.

* membership (``zkbroker.broker.rules.groups.membership``): JoinGroup, SyncGroup, Heartbeat,
  LeaveGroup, the rebalance and member expiry, the group's own record;
* offsets (``zkbroker.broker.rules.groups.offsets``): OffsetCommit, TxnOffsetCommit and its
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

from collections.abc import Iterable

from zkbroker.broker.log import get_logger
from zkbroker.broker.rules.groups import offsets_topic_codec as rec
from zkbroker.broker.rules.groups.classic_group import (
    ClassicGroup,
)
from zkbroker.broker.rules.groups.config import (
    OFFSET_METADATA_MAX_BYTES,
    CoordinatorRecord,
    GroupConfig,
    TxnWriter,
    Writer,
    group_config,
)
from zkbroker.broker.rules.groups.membership import (
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    UNKNOWN_MEMBER_ID,
    GroupMembership,
)
from zkbroker.broker.rules.groups.offsets import GroupOffsets
from zkbroker.zk_layout.release import Release

# Importable from here as before the split.
__all__ = [
    "NEW_MEMBER_JOIN_TIMEOUT_MS",
    "OFFSET_METADATA_MAX_BYTES",
    "UNKNOWN_MEMBER_ID",
    "CoordinatorRecord",
    "GroupConfig",
    "GroupStateMachine",
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
        # Each call below is one side's: the coordinator and the handlers hold this one object.
        self.group = self.membership.group
        self.join = self.membership.join
        self.sync = self.membership.sync
        self.heartbeat = self.membership.heartbeat
        self.leave = self.membership.leave
        self.tick = self.membership.tick
        self.commit_offsets = self.offsets.commit_offsets
        self.commit_txn_offsets = self.offsets.commit_txn_offsets
        self.complete_txn = self.offsets.complete_txn
        self.unstable_offset = self.offsets.unstable_offset
        self.fetch_offsets = self.offsets.fetch_offsets
        self.delete_offsets = self.offsets.delete_offsets
        self.delete_groups = self.offsets.delete_groups
        self.expire_offsets = self.offsets.expire_offsets
        self.loaded = self.membership.loaded

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

    next_deadline = staticmethod(GroupMembership.next_deadline)

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

    def unload(self, group_ids: Iterable[str]) -> None:
        """The partition moved away: waiting members learn NOT_COORDINATOR (Kafka's
        onGroupUnloaded) and the groups are forgotten here."""
        group_ids = list(group_ids)
        self.offsets.unload(group_ids)
        self.membership.unload(group_ids)
