"""Committed offsets of classic groups: decisions, pure, with the time passed in.

OffsetCommit, OffsetFetch, OffsetDelete (KIP-496), offset expiry (offsets.retention.minutes,
KIP-211) and DeleteGroups, which tombstones a group with its offsets as expiry does (Kafka's
``cleanupGroupMetadata``); transactional offsets (TxnOffsetCommit, kept pending in
``zkbroker.broker.rules.groups.txn_offsets`` until the transaction's marker); replaying offset
records. Kafka 3.9's ``GroupCoordinator.scala`` offset side (handleCommitOffsets,
handleTxnCommitOffsets, handleDeleteGroups, handleDeleteOffsets) and ``GroupMetadataManager``'s
offsets: docs/kafka-behaviour.md §16 and, for transactions, §17.

Deliberately not here: membership (join, sync, heartbeat, leave, rebalance:
``zkbroker.broker.rules.groups.membership``; a commit only asks it to restart the member's session),
timers, the log and the wire (``zkbroker.broker.groups.coordinator``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence

from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.rules.groups import offsets_topic_codec as rec
from zkbroker.broker.rules.groups.classic_group import (
    ClassicGroup,
    CommittedOffset,
    GroupState,
    TopicPartition,
)
from zkbroker.broker.rules.groups.config import (
    CoordinatorRecord,
    GroupConfig,
    GroupsSide,
    TxnWriter,
    Writer,
)
from zkbroker.broker.rules.groups.membership import (
    DEAD_GROUP_RETRY_SINCE,
    UNKNOWN_MEMBER_ID,
    schedule_heartbeat,
)
from zkbroker.broker.rules.groups.txn_offsets import PendingTxnOffsets
from zkbroker.zk_layout.release import Release, release_at_least

# KIP-211 (2.1): an offset without an explicit retention lives as long as its group does; before,
# every commit was stamped to expire offsets.retention.minutes after it, live group or not.
GROUP_BOUND_RETENTION_SINCE: Release = (2, 1)


# GroupCoordinator.maybeConvertOffsetCommitError: the append's code (or a verification's) as an
# offset commit answers it; any other code passes unchanged (REQUEST_TIMED_OUT among them).
_OFFSET_COMMIT_CONVERTED = {
    ec.UNKNOWN_TOPIC_OR_PARTITION: ec.COORDINATOR_NOT_AVAILABLE,
    ec.NOT_ENOUGH_REPLICAS: ec.COORDINATOR_NOT_AVAILABLE,
    ec.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ec.COORDINATOR_NOT_AVAILABLE,
    ec.NOT_LEADER_OR_FOLLOWER: ec.NOT_COORDINATOR,
    ec.KAFKA_STORAGE_ERROR: ec.NOT_COORDINATOR,
    ec.MESSAGE_TOO_LARGE: ec.INVALID_COMMIT_OFFSET_SIZE,
    ec.RECORD_LIST_TOO_LARGE: ec.INVALID_COMMIT_OFFSET_SIZE,
    ec.INVALID_FETCH_SIZE: ec.INVALID_COMMIT_OFFSET_SIZE,
    # Added in 3.7.1 for verification: older clients did not retry NETWORK_EXCEPTION here.
    ec.NETWORK_EXCEPTION: ec.COORDINATOR_LOAD_IN_PROGRESS,
}


def convert_offset_commit_error(code: int) -> int:
    """An offset commit's answer for a failed append or verification of its records."""
    return _OFFSET_COMMIT_CONVERTED.get(code, code)


class GroupOffsets(GroupsSide):
    """The committed (and pending transactional) offsets of every classic group of the
    partitions one coordinator owns: one base of
    ``zkbroker.broker.rules.groups.state_machine.GroupStateMachine`` (the other, the membership
    side, is ``zkbroker.broker.rules.groups.membership``). `write_txn` appends a
    TxnOffsetCommit's records; without one, a TxnOffsetCommit answers UNKNOWN_SERVER_ERROR."""

    def __init__(
        self,
        config: GroupConfig,
        release: Release,
        write: Writer,
        write_txn: TxnWriter | None = None,
    ) -> None:
        super().__init__(config, release, write)
        self._group_bound_retention = release_at_least(release, GROUP_BOUND_RETENTION_SINCE)
        self.pending_txn = PendingTxnOffsets()
        self.write_txn = write_txn

    def commit_offsets(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        generation_id: int,
        offsets: Mapping[TopicPartition, CommittedOffset],
        now: int,
    ) -> dict[TopicPartition, int]:
        """Kafka's handleCommitOffsets/doCommitOffsets; too-long metadata is refused per
        partition (OFFSET_METADATA_TOO_LARGE) and the rest stored."""
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return dict.fromkeys(offsets, ec.ILLEGAL_GENERATION)
            group = self.groups[group_id] = ClassicGroup(group_id, state_timestamp=now)
        error = self._validate_commit(group, member_id, instance_id, generation_id)
        if error == ec.NONE and group.is_state(GroupState.COMPLETING_REBALANCE):
            error = ec.REBALANCE_IN_PROGRESS
        if error != ec.NONE:
            self._drop_if_unused(group)
            return dict.fromkeys(offsets, error)
        if group.state in (GroupState.STABLE, GroupState.PREPARING_REBALANCE):
            member = group.members[member_id]
            schedule_heartbeat(member, now, member.session_timeout_ms)
        codes, good = self._within_metadata_limit(offsets)
        if good:
            error = self._write(group_id, self._offset_records(group_id, good))
            if error == ec.NONE:
                group.offsets.update(good)
            codes.update(dict.fromkeys(good, error))
        self._drop_if_unused(group)
        return codes

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
        """Kafka's handleTxnCommitOffsets: a missing group is created Empty; the member checks
        apply only when a generation, member id or instance id is given (validateOffsetCommit
        with isTransactional); the offsets are written as the producer's transactional records
        and stay pending until its marker (`complete_txn`)."""
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = ClassicGroup(group_id, state_timestamp=now)
        error = ec.NONE
        if group.is_state(GroupState.DEAD):
            error = ec.COORDINATOR_NOT_AVAILABLE
        elif generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or instance_id is not None:
            if instance_id is not None:
                error = group.current_member_error(member_id, instance_id)
            elif member_id != UNKNOWN_MEMBER_ID and member_id not in group.members:
                error = ec.UNKNOWN_MEMBER_ID
            if error == ec.NONE and generation_id != group.generation_id:
                error = ec.ILLEGAL_GENERATION
        if error != ec.NONE or self.write_txn is None:
            self._drop_if_unused(group)
            return dict.fromkeys(offsets, error if error != ec.NONE else ec.UNKNOWN_SERVER_ERROR)
        codes, good = self._within_metadata_limit(offsets)
        if good:
            records = self._offset_records(group_id, good)
            error = self.write_txn(group_id, records, producer_id, producer_epoch)
            if error == ec.NONE:
                self.pending_txn.add(producer_id, group_id, good)
            codes.update(dict.fromkeys(good, error))
        self._drop_if_unused(group)
        return codes

    def _within_metadata_limit(
        self, offsets: Mapping[TopicPartition, CommittedOffset]
    ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, CommittedOffset]]:
        """OFFSET_METADATA_TOO_LARGE for the partitions whose metadata is over the limit, and
        the offsets to store."""
        limit = self.config.offset_metadata_max_bytes
        codes: dict[TopicPartition, int] = {}
        good: dict[TopicPartition, CommittedOffset] = {}
        for tp, value in offsets.items():
            if len(value.metadata) > limit:
                codes[tp] = ec.OFFSET_METADATA_TOO_LARGE
            elif value.expire_timestamp is None and not self._group_bound_retention:
                # Before KIP-211 the broker stamped the default retention on every commit.
                retention = self.config.offsets_retention_ms
                good[tp] = dataclasses.replace(
                    value, expire_timestamp=value.commit_timestamp + retention
                )
            else:
                good[tp] = value
        return codes, good

    def _offset_records(
        self, group_id: str, offsets: Mapping[TopicPartition, CommittedOffset]
    ) -> list[CoordinatorRecord]:
        return [
            (rec.encode_offset_key(rec.OffsetKey(group_id, tp[0], tp[1])), self._offset_value(v))
            for tp, v in offsets.items()
        ]

    def complete_txn(
        self, producer_id: int, commit: bool, in_partition: Callable[[str], bool], now: int
    ) -> list[str]:
        """The producer's transaction ended in the groups' partition (its marker was written
        or replayed): a commit materializes its pending offsets, an abort drops them. Returns
        the groups touched."""
        done = self.pending_txn.complete(producer_id, in_partition)
        for group_id, offsets in done.items():
            group = self.groups.get(group_id)
            if commit:
                if group is None:
                    group = self.groups[group_id] = ClassicGroup(group_id, state_timestamp=now)
                group.offsets.update(offsets)
            elif group is not None:
                self._drop_if_unused(group)
        return list(done)

    def unstable_offset(self, group_id: str, tp: TopicPartition) -> bool:
        """Whether OffsetFetch with require_stable must answer UNSTABLE_OFFSET_COMMIT."""
        return self.pending_txn.is_pending(group_id, tp)

    def _offset_value(self, v: CommittedOffset) -> bytes:
        expiry = v.expire_timestamp is not None
        version = rec.offset_value_version(self.release, expiry)
        return rec.encode_offset_value(
            rec.OffsetValue(
                v.offset,
                v.metadata,
                v.commit_timestamp,
                v.leader_epoch,
                v.expire_timestamp if v.expire_timestamp is not None else -1,
            ),
            version,
        )

    def _validate_commit(
        self, group: ClassicGroup, member_id: str, instance_id: str | None, generation_id: int
    ) -> int:
        before_2_3 = not release_at_least(self.release, DEAD_GROUP_RETRY_SINCE)
        if group.is_state(GroupState.DEAD):
            return ec.UNKNOWN_MEMBER_ID if before_2_3 else ec.COORDINATOR_NOT_AVAILABLE
        if before_2_3 and group.is_state(GroupState.COMPLETING_REBALANCE):
            # Before 2.3 the awaited assignment was answered before the member was looked at.
            return ec.REBALANCE_IN_PROGRESS
        if generation_id < 0 and group.is_state(GroupState.EMPTY):
            # An admin client or a consumer managing its own partitions: whatever member id it
            # names, an Empty group takes the commit (Kafka's validateOffsetCommit).
            return ec.NONE
        if generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or instance_id is not None:
            error = group.current_member_error(member_id, instance_id)
            if error == ec.NONE and generation_id != group.generation_id:
                error = ec.ILLEGAL_GENERATION
            return error
        if not group.is_state(GroupState.EMPTY):
            return ec.UNKNOWN_MEMBER_ID  # only members commit to a non-empty group
        return ec.NONE

    def _drop_if_unused(self, group: ClassicGroup) -> None:
        """A group created for a commit that stored nothing does not stay."""
        if (
            group.is_state(GroupState.EMPTY)
            and not group.offsets
            and not self.pending_txn.has_group(group.group_id)
            and not group.members
            and group.protocol_type is None
            and group.generation_id == 0
        ):
            self.groups.pop(group.group_id, None)

    def fetch_offsets(
        self, group_id: str, wanted: Iterable[TopicPartition] | None
    ) -> dict[TopicPartition, CommittedOffset | None]:
        group = self.groups.get(group_id)
        offsets = {} if group is None or group.is_state(GroupState.DEAD) else group.offsets
        if wanted is None:
            return dict(sorted(offsets.items()))
        return {tp: offsets.get(tp) for tp in wanted}

    def delete_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition], now: int
    ) -> tuple[int, dict[TopicPartition, int]]:
        """KIP-496's OffsetDelete: (group error, per partition error)."""
        group = self.groups.get(group_id)
        if group is None or group.is_state(GroupState.DEAD):
            return ec.GROUP_ID_NOT_FOUND, {}
        codes: dict[TopicPartition, int] = {}
        eligible: list[TopicPartition] = []
        if group.is_state(GroupState.EMPTY):
            eligible = list(partitions)
        elif group.protocol_type == "consumer":
            for tp in partitions:
                if group.is_subscribed_to(tp[0]):
                    codes[tp] = ec.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    eligible.append(tp)
        else:
            return ec.NON_EMPTY_GROUP, {}
        if eligible:
            # GroupMetadata.removeOffsets: the partitions' pending transactional offsets go
            # too (the transaction's commit brings nothing for them).
            self.pending_txn.drop_partitions(group_id, eligible)
            self._remove_offsets(group, eligible, now)
            codes.update(dict.fromkeys(eligible, ec.NONE))
        return ec.NONE, codes

    def _remove_offsets(
        self, group: ClassicGroup, partitions: Iterable[TopicPartition], now: int
    ) -> None:
        """Tombstones for the offsets; the group itself goes once it is Empty with none left,
        committed or pending in a transaction (Kafka's cleanupGroupMetadata with
        ``GroupMetadata.hasOffsets``). Expiry leaves pending transactional offsets alone
        (``removeExpiredOffsets``); OffsetDelete is the caller that drops them."""
        present = [tp for tp in partitions if tp in group.offsets]
        records: list[CoordinatorRecord] = [
            (rec.encode_offset_key(rec.OffsetKey(group.group_id, tp[0], tp[1])), None)
            for tp in present
        ]
        for tp in present:
            del group.offsets[tp]
        if (
            group.is_state(GroupState.EMPTY)
            and not group.offsets
            and not self.pending_txn.has_group(group.group_id)
        ):
            group.transition(GroupState.DEAD, now)
            records.append((rec.encode_group_key(rec.GroupKey(group.group_id)), None))
            self.groups.pop(group.group_id, None)
        if records:
            self._write(group.group_id, records)

    def delete_groups(self, group_ids: Sequence[str], now: int) -> dict[str, int]:
        codes: dict[str, int] = {}
        for group_id in group_ids:
            group = self.groups.get(group_id)
            if group is None or group.is_state(GroupState.DEAD):
                codes[group_id] = ec.GROUP_ID_NOT_FOUND
            elif group.is_state(GroupState.EMPTY):
                group.transition(GroupState.DEAD, now)
                records: list[CoordinatorRecord] = [
                    (rec.encode_offset_key(rec.OffsetKey(group_id, t, p)), None)
                    for t, p in group.offsets
                ]
                records.append((rec.encode_group_key(rec.GroupKey(group_id)), None))
                group.offsets.clear()
                # DeleteGroups goes by state alone: an Empty group goes even with offsets
                # pending in a transaction, and they with it (Kafka drops the group object
                # holding them: the transaction's end finds no group to complete them in).
                self.pending_txn.drop_groups({group_id})
                self.groups.pop(group_id, None)
                self._write(group_id, records)
                codes[group_id] = ec.NONE
            else:
                codes[group_id] = ec.NON_EMPTY_GROUP
        return codes

    def expire_offsets(self, now: int) -> int:
        """Kafka's cleanupGroupMetadata with removeExpiredOffsets; the number removed."""
        removed = 0
        retention = self.config.offsets_retention_ms
        for group in list(self.groups.values()):
            if self._group_bound_retention:
                expired = self._expired(group, now, retention)
            else:  # every offset carries its expiry, whatever its group's state
                expired = [
                    tp
                    for tp, v in group.offsets.items()
                    if v.expire_timestamp is not None and now > v.expire_timestamp
                ]
            if expired or (group.is_state(GroupState.EMPTY) and not group.offsets):
                removed += len(expired)
                self._remove_offsets(group, expired, now)
        return removed

    @staticmethod
    def _expired(group: ClassicGroup, now: int, retention: int) -> list[TopicPartition]:
        def pick(base: Callable[[CommittedOffset], int], keep: set[str]) -> list[TopicPartition]:
            out = []
            for tp, v in group.offsets.items():
                if tp[0] in keep:
                    continue
                if v.expire_timestamp is not None:
                    if now >= v.expire_timestamp:
                        out.append(tp)
                elif now - base(v) >= retention:
                    out.append(tp)
            return out

        if group.protocol_type is None and group.is_state(GroupState.EMPTY):
            return pick(lambda v: v.commit_timestamp, set())
        if group.is_state(GroupState.EMPTY):
            return pick(lambda _v: group.state_timestamp, set())
        if (
            group.is_state(GroupState.STABLE)
            and group.protocol_type == "consumer"
            and group.subscribed_topics is not None
        ):
            return pick(lambda v: v.commit_timestamp, group.subscribed_topics)
        return []

    def replay_offset(
        self, key: rec.OffsetKey, value: bytes | None, now: int, producer_id: int | None
    ) -> None:
        """Apply one offset record of the log (GroupMetadataManager.doLoadGroupsAndOffsets): an
        offset of a transactional batch (`producer_id`) stays pending until its marker is
        replayed."""
        tp = (key.topic, key.partition)
        if producer_id is not None:
            if value is not None:
                ov = rec.decode_offset_value(value)
                offset = CommittedOffset(
                    ov.offset,
                    ov.leader_epoch,
                    ov.metadata,
                    ov.commit_timestamp,
                    ov.expire_timestamp if ov.expire_timestamp >= 0 else None,
                )
                self.pending_txn.add(producer_id, key.group, {tp: offset})
                if key.group not in self.groups:
                    created = ClassicGroup(key.group, state_timestamp=now)
                    self.groups[key.group] = created
            return
        group = self.groups.get(key.group)
        if value is None:
            if group is not None:
                group.offsets.pop(tp, None)
            return
        ov = rec.decode_offset_value(value)
        if group is None:
            group = self.groups[key.group] = ClassicGroup(key.group, state_timestamp=now)
        group.offsets[tp] = CommittedOffset(
            ov.offset,
            ov.leader_epoch,
            ov.metadata,
            ov.commit_timestamp,
            ov.expire_timestamp if ov.expire_timestamp >= 0 else None,
        )

    def unload_offsets(self, group_ids: Iterable[str]) -> None:
        """The partition moved away: its groups' pending transactional offsets are forgotten."""
        self.pending_txn.drop_groups(set(group_ids))
