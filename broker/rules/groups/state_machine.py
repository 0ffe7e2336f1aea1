"""The classic group coordinator's decisions, as pure code with the time passed in: one object
over the two sides of a group, as Kafka's coordinator shard holds its two managers.

`GroupStateMachine` is both sides at once; each request's call is defined by the side it
belongs to, and the coordinator and the handlers call it on this object:

* membership (``zkbroker.broker.rules.groups.membership``): JoinGroup, SyncGroup, Heartbeat,
  LeaveGroup, the rebalance and member expiry, the group's own record;
* offsets (``zkbroker.broker.rules.groups.offsets``): OffsetCommit, TxnOffsetCommit and its
  transaction's end, OffsetFetch, OffsetDelete, DeleteGroups, offset expiry.

Both read one ``ClassicGroup`` per group id (``groups``), one config and one writer. This
module adds what spans both: dispatching the log's records to the side they belong to while
loading (`replay`) and telling both when the partition moves away (`unload`). Follows Kafka
3.9's ``GroupCoordinator.scala`` and ``GroupMetadataManager``: docs/kafka-behaviour.md §16
(transactional offsets §17). Writes go through ``write``: the group's records (key, value or
None for a tombstone) for the caller to append to the group's partition of
``__consumer_offsets``; it answers an error code (NONE when appended). A TxnOffsetCommit's
records go through ``write_txn``, as the producer's transactional batch.

Deliberately not here: whether this broker coordinates a group or is loading it (the caller
checks first: Kafka's validateGroupStatus), the wire, the log, timers and tasks
(``zkbroker.broker.groups.coordinator``).
"""

from __future__ import annotations

from collections.abc import Iterable

from zkbroker.broker.log import get_logger
from zkbroker.broker.rules.groups import offsets_topic_codec as rec
from zkbroker.broker.rules.groups.membership import GroupMembership
from zkbroker.broker.rules.groups.offsets import GroupOffsets

_log = get_logger(__name__)


class GroupStateMachine(GroupMembership, GroupOffsets):
    """Every classic group of the partitions one coordinator owns: its members and its
    offsets. Built as `GroupOffsets` is: (config, release, write, write_txn)."""

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
                self.replay_offset(decoded, value, now, producer_id)
            elif isinstance(decoded, rec.GroupKey):
                self.replay_group(decoded, value, now)
        except rec.RecordFormatError as e:
            _log.warning("group.unreadable_record", reason=str(e))

    def unload(self, group_ids: Iterable[str]) -> None:
        """The partition moved away: waiting members learn NOT_COORDINATOR (Kafka's
        onGroupUnloaded) and the groups are forgotten here, with their pending transactional
        offsets."""
        group_ids = list(group_ids)
        self.unload_offsets(group_ids)
        self.unload_members(group_ids)
