"""The classic group coordinator's decisions, as pure code with the time passed in.

Follows Kafka 3.9's ``GroupCoordinator.scala`` (handleJoinGroup and its doNewMemberJoinGroup /
doStaticMemberJoinGroup / doCurrentMemberJoinGroup, handleSyncGroup, handleHeartbeat,
handleLeaveGroup, handleCommitOffsets, handleDeleteGroups, handleDeleteOffsets, the delayed
join (``DelayedJoin``, ``InitialDelayedJoin``: group.initial.rebalance.delay.ms), the delayed
sync and the heartbeat expiry (``DelayedHeartbeat``)), ``GroupMetadataManager`` (what is stored,
offset expiry with offsets.retention.minutes, replaying the log) and the KIPs it cites:
KIP-345 static members, KIP-394 MEMBER_ID_REQUIRED, KIP-429 (protocols are opaque), KIP-496
OffsetDelete, KIP-559 protocol type/name in answers, KIP-814 skip_assignment, KIP-800 reasons
(logged only). See docs/kafka-behaviour.md §16.

Kafka's purgatories become deadlines on the group (``ClassicGroup.join_deadline`` and friends);
the caller runs `tick` when `next_deadline` passes. Writes go through ``write``: the group's
records (key, value or None for a tombstone) for the caller to append to the group's partition
of ``__consumer_offsets``; it answers an error code (NONE when appended).

Transactional offsets (TxnOffsetCommit, ``handleTxnCommitOffsets`` / ``doTxnCommitOffsets`` and
``handleTxnCompletion``, docs/kafka-behaviour.md §17): stored through ``write_txn`` as records of
the producer's transaction and kept pending (``zkbroker.broker.groups.txn_offsets``) until
`complete_txn` sees the transaction's marker.

Deliberately not here: whether this broker coordinates a group or is loading it (the caller
checks first: Kafka's validateGroupStatus), the wire, the log, timers and tasks
(``zkbroker.broker.groups.coordinator``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from zkbroker.broker.groups import records as rec
from zkbroker.broker.groups.classic_group import (
    ClassicGroup,
    CommittedOffset,
    GroupState,
    JoinCallback,
    JoinResult,
    Member,
    SyncCallback,
    SyncResult,
    TopicPartition,
)
from zkbroker.broker.groups.txn_offsets import PendingTxnOffsets
from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.zk_layout.release import Release

_log = get_logger(__name__)

# Kafka's GroupCoordinator.NewMemberJoinTimeoutMs.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
UNKNOWN_MEMBER_ID = ""
OFFSET_METADATA_MAX_BYTES = 4096

Record = tuple[bytes, bytes | None]
Writer = Callable[[str, Sequence[Record]], int]
# (group id, records, producer id, producer epoch) -> error code: a transactional batch.
TxnWriter = Callable[[str, Sequence[Record], int, int], int]


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


@dataclass(frozen=True, slots=True)
class _Join:
    """One JoinGroup as the join paths read it (Kafka passes these one by one)."""

    member_id: str
    instance_id: str | None
    require_known_member_id: bool
    support_skip_assignment: bool
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    reason: str | None
    now: int
    callback: JoinCallback


class GroupStateMachine:
    """Every classic group of the partitions one coordinator owns."""

    def __init__(self, config: GroupConfig, release: Release, write: Writer) -> None:
        self.config = config
        self.release = release
        self._write = write
        self.groups: dict[str, ClassicGroup] = {}
        self.pending_txn = PendingTxnOffsets()
        # Set by the coordinator: how a TxnOffsetCommit's records are appended.
        self.write_txn: TxnWriter | None = None

    # ---- lookups -------------------------------------------------------------------------

    def group(self, group_id: str) -> ClassicGroup | None:
        found = self.groups.get(group_id)
        return found

    def _get_or_create(self, group_id: str, create: bool, now: int) -> ClassicGroup | None:
        found = self.groups.get(group_id)
        if found is None and create:
            found = self.groups[group_id] = ClassicGroup(group_id, state_timestamp=now)
        return found

    # ---- JoinGroup -----------------------------------------------------------------------

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
        cfg = self.config
        if not cfg.min_session_timeout_ms <= session_timeout_ms <= cfg.max_session_timeout_ms:
            callback(JoinResult(ec.INVALID_SESSION_TIMEOUT, member_id))
            return
        unknown = member_id == UNKNOWN_MEMBER_ID
        group = self._get_or_create(group_id, unknown, now)
        if group is None:
            callback(JoinResult(ec.UNKNOWN_MEMBER_ID, member_id))
            return
        if not self._accept_joining(group, member_id):
            group.remove(member_id)
            callback(JoinResult(ec.GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID))
        else:
            request = _Join(
                member_id,
                instance_id,
                require_known_member_id,
                support_skip_assignment,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                protocol_type,
                protocols,
                reason,
                now,
                callback,
            )
            if unknown:
                self._new_member_join(group, request)
            else:
                self._current_member_join(group, request)
        if group.is_state(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group, now)

    def _accept_joining(self, group: ClassicGroup, member_id: str) -> bool:
        limit = self.config.max_size
        if group.state in (GroupState.EMPTY, GroupState.DEAD):
            return True
        if group.is_state(GroupState.PREPARING_REBALANCE):
            member = group.members.get(member_id)
            awaiting = member is not None and member.awaiting_join is not None
            return awaiting or group.num_awaiting_join < limit
        return group.has(member_id) or group.size < limit

    def _new_member_join(self, group: ClassicGroup, join: _Join) -> None:
        """Kafka's doNewMemberJoinGroup / doStaticMemberJoinGroup."""
        answer = join.callback
        if group.is_state(GroupState.DEAD):
            # The group is being removed (e.g. its partition moved): look the coordinator up.
            answer(JoinResult(ec.COORDINATOR_NOT_AVAILABLE, UNKNOWN_MEMBER_ID))
            return
        if not group.supports_protocols(join.protocol_type, join.protocols):
            answer(JoinResult(ec.INCONSISTENT_GROUP_PROTOCOL, UNKNOWN_MEMBER_ID))
            return
        new_id = f"{join.client_id}-{uuid.uuid4()}"
        if join.instance_id is not None:
            old_id = group.static_member_id(join.instance_id)
            if old_id is None:
                self._add_member_and_rebalance(group, new_id, join)
            else:
                self._update_static_member(group, old_id, new_id, join.instance_id, join)
        elif join.require_known_member_id:
            # KIP-394: hand out the id and expect the member back with it.
            group.pending_members[new_id] = join.now + join.session_timeout_ms
            answer(JoinResult(ec.MEMBER_ID_REQUIRED, new_id))
        else:
            self._add_member_and_rebalance(group, new_id, join)

    def _current_member_join(self, group: ClassicGroup, join: _Join) -> None:
        """Kafka's doCurrentMemberJoinGroup."""
        member_id, answer = join.member_id, join.callback
        if group.is_state(GroupState.DEAD):
            answer(JoinResult(ec.COORDINATOR_NOT_AVAILABLE, member_id))
            return
        if not group.supports_protocols(join.protocol_type, join.protocols):
            answer(JoinResult(ec.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if group.is_pending(member_id):
            self._add_member_and_rebalance(group, member_id, join)
            return
        instance_id = join.instance_id
        instance_unknown = instance_id is not None and group.static_member_id(instance_id) is None
        if group.is_static_member_fenced(instance_id, member_id):
            answer(JoinResult(ec.FENCED_INSTANCE_ID, member_id))
            return
        if not group.has(member_id) or instance_unknown:
            answer(JoinResult(ec.UNKNOWN_MEMBER_ID, member_id))
            return
        member = group.members[member_id]
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, join)
        elif state is GroupState.COMPLETING_REBALANCE:
            if member.matches(join.protocols):
                # The member missed its JoinGroup answer: the current generation again.
                answer(self._join_result(group, member_id, leader_members=True))
            else:
                self._update_member_and_rebalance(group, member, join)
        elif state is GroupState.STABLE:
            if group.is_leader(member_id) or not member.matches(join.protocols):
                # A leader's JoinGroup always rebalances: its metadata may have changed in
                # ways the subscription does not show.
                self._update_member_and_rebalance(group, member, join)
            else:
                answer(self._join_result(group, member_id, leader_members=False))
        else:
            answer(JoinResult(ec.UNKNOWN_MEMBER_ID, member_id))

    def _join_result(
        self, group: ClassicGroup, member_id: str, *, leader_members: bool
    ) -> JoinResult:
        is_leader = group.is_leader(member_id)
        return JoinResult(
            error=ec.NONE,
            member_id=member_id,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader_id=group.leader_id or "",
            members=group.current_member_metadata() if leader_members and is_leader else [],
        )

    def _add_member_and_rebalance(self, group: ClassicGroup, member_id: str, join: _Join) -> None:
        member = Member(
            member_id,
            join.instance_id,
            join.client_id,
            join.client_host,
            join.rebalance_timeout_ms,
            join.session_timeout_ms,
            join.protocol_type,
            list(join.protocols),
            is_new=True,
        )
        now = join.now
        if group.is_state(GroupState.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member, join.callback)
        # A new member cannot heartbeat yet; it gets NewMemberJoinTimeoutMs to be rebalanced in.
        self._schedule_heartbeat(member, now, NEW_MEMBER_JOIN_TIMEOUT_MS)
        _log.debug(
            "group.member_added", group=group.group_id, member=member_id, reason=join.reason
        )
        self._maybe_prepare_rebalance(group, now, f"adding member {member_id}")

    def _update_member_and_rebalance(
        self, group: ClassicGroup, member: Member, join: _Join
    ) -> None:
        group.update_member(
            member,
            join.protocols,
            join.rebalance_timeout_ms,
            join.session_timeout_ms,
            join.callback,
        )
        self._maybe_prepare_rebalance(group, join.now, f"member {member.member_id} rejoined")

    def _update_static_member(
        self, group: ClassicGroup, old_id: str, new_id: str, instance_id: str, join: _Join
    ) -> None:
        now, callback = join.now, join.callback
        current_leader = group.leader_id or ""
        member = group.replace_static_member(instance_id, old_id, new_id)
        self._schedule_heartbeat(member, now, member.session_timeout_ms)
        old = (list(member.protocols), member.rebalance_timeout_ms, member.session_timeout_ms)
        group.update_member(
            member, join.protocols, join.rebalance_timeout_ms, join.session_timeout_ms, callback
        )
        state = group.state
        if state is GroupState.STABLE:
            if group.protocol_name == group.select_protocol():
                assignment = {m.member_id: m.assignment for m in group.members.values()}
                error = self._store_group(group, assignment, now)
                if error != ec.NONE:
                    group.update_member(member, old[0], old[1], old[2], None)
                    back = group.replace_static_member(instance_id, new_id, old_id)
                    self._schedule_heartbeat(back, now, back.session_timeout_ms)
                    callback(
                        JoinResult(
                            error,
                            UNKNOWN_MEMBER_ID,
                            group.generation_id,
                            group.protocol_type,
                            group.protocol_name,
                            current_leader,
                        )
                    )
                    return
                is_leader = group.is_leader(new_id)
                if join.support_skip_assignment:
                    # KIP-814: the leader learns it leads without running the assignor.
                    result = self._join_result(group, new_id, leader_members=True)
                    result.skip_assignment = is_leader
                else:
                    # The old leader id, so a returning leader does not reassign a stable group.
                    result = self._join_result(group, new_id, leader_members=False)
                    result.leader_id = current_leader
                group.invoke_join(member, result)
            else:
                self._maybe_prepare_rebalance(group, now, f"static member {instance_id} changed")
        elif state is GroupState.COMPLETING_REBALANCE:
            self._prepare_rebalance(group, now, f"static member {instance_id} rejoined")

    # ---- rebalance -----------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: ClassicGroup, now: int, reason: str) -> None:
        if group.can_rebalance:
            self._prepare_rebalance(group, now, reason)

    def _prepare_rebalance(self, group: ClassicGroup, now: int, reason: str) -> None:
        if group.is_state(GroupState.COMPLETING_REBALANCE):
            self._reset_and_propagate_error(group, ec.REBALANCE_IN_PROGRESS)
        group.sync_deadline = None
        rebalance_timeout = max((m.rebalance_timeout_ms for m in group.members.values()), default=0)
        if group.is_state(GroupState.EMPTY):
            delay = self.config.initial_rebalance_delay_ms
            group.initial_join = True
            group.initial_delay_ms = delay
            group.initial_remaining_ms = max(rebalance_timeout - delay, 0)
            group.join_deadline = now + delay
        else:
            group.initial_join = False
            group.join_deadline = now + rebalance_timeout
        group.transition(GroupState.PREPARING_REBALANCE, now)
        _log.info(
            "group.preparing_rebalance",
            group=group.group_id,
            generation=group.generation_id,
            reason=reason,
        )
        self._try_complete_join(group, now)

    def _try_complete_join(self, group: ClassicGroup, now: int) -> None:
        """Kafka's DelayedJoin.tryComplete (the initial delayed join only completes on time)."""
        if not group.initial_join and group.has_all_members_joined:
            self._complete_join(group, now)

    def _expire_join(self, group: ClassicGroup, now: int) -> None:
        if group.initial_join and group.new_member_added and group.initial_remaining_ms != 0:
            # InitialDelayedJoin: a member arrived during the delay; wait once more.
            group.new_member_added = False
            delay = min(group.initial_delay_ms, group.initial_remaining_ms)
            group.initial_remaining_ms = max(group.initial_remaining_ms - delay, 0)
            group.join_deadline = now + delay
            return
        self._complete_join(group, now)

    def _complete_join(self, group: ClassicGroup, now: int) -> None:
        group.join_deadline = None
        group.initial_join = False
        for failed in [m for m in group.not_yet_rejoined() if not m.is_static]:
            group.remove(failed.member_id)
        if group.is_state(GroupState.DEAD):
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined: wait another rebalance timeout for the session timeouts to
            # remove the silent members.
            group.join_deadline = now + max(m.rebalance_timeout_ms for m in group.members.values())
            return
        group.init_next_generation(now)
        if group.is_state(GroupState.EMPTY):
            self._store_group(group, {}, now)
            return
        _log.info(
            "group.stabilizing",
            group=group.group_id,
            generation=group.generation_id,
            protocol=group.protocol_name,
            members=len(group.members),
        )
        for member in list(group.members.values()):
            group.invoke_join(
                member, self._join_result(group, member.member_id, leader_members=True)
            )
            self._schedule_heartbeat(member, now, member.session_timeout_ms)
            member.is_new = False
            group.pending_sync.add(member.member_id)
        group.sync_deadline = now + max(m.rebalance_timeout_ms for m in group.members.values())

    def _expire_sync(self, group: ClassicGroup, now: int) -> None:
        group.sync_deadline = None
        if group.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            return
        if group.pending_sync:
            for member_id in list(group.pending_sync):
                group.remove(member_id)
            self._prepare_rebalance(group, now, "members did not send SyncGroup in time")

    def _reset_and_propagate_error(self, group: ClassicGroup, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
            group.invoke_sync(member, SyncResult(error))

    # ---- SyncGroup -----------------------------------------------------------------------

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
        group = self.groups.get(group_id)
        if group is None:
            callback(SyncResult(ec.UNKNOWN_MEMBER_ID))
            return
        error = self._validate_member(group, member_id, instance_id, generation_id)
        if error == ec.NONE and protocol_type is not None and protocol_type != group.protocol_type:
            error = ec.INCONSISTENT_GROUP_PROTOCOL
        if error == ec.NONE and protocol_name is not None and protocol_name != group.protocol_name:
            error = ec.INCONSISTENT_GROUP_PROTOCOL
        if error != ec.NONE:
            callback(SyncResult(error))
            return
        state = group.state
        if state is GroupState.EMPTY:
            callback(SyncResult(ec.UNKNOWN_MEMBER_ID))
        elif state is GroupState.PREPARING_REBALANCE:
            callback(SyncResult(ec.REBALANCE_IN_PROGRESS))
        elif state is GroupState.COMPLETING_REBALANCE:
            group.members[member_id].awaiting_sync = callback
            group.pending_sync.discard(member_id)
            if group.is_leader(member_id):
                full = {m: assignments.get(m, b"") for m in group.members}
                error = self._store_group(group, full, now)
                if group.is_state(GroupState.COMPLETING_REBALANCE) and (
                    generation_id == group.generation_id
                ):
                    if error != ec.NONE:
                        self._reset_and_propagate_error(group, error)
                        self._maybe_prepare_rebalance(group, now, "storing the assignment failed")
                    else:
                        self._propagate_assignment(group, full, now)
                        group.transition(GroupState.STABLE, now)
                        _log.info(
                            "group.stable", group=group.group_id, generation=group.generation_id
                        )
        else:  # Stable
            group.pending_sync.discard(member_id)
            member = group.members[member_id]
            callback(
                SyncResult(ec.NONE, group.protocol_type, group.protocol_name, member.assignment)
            )
            self._schedule_heartbeat(member, now, member.session_timeout_ms)
        if not group.pending_sync and group.sync_deadline is not None:
            group.sync_deadline = None

    def _propagate_assignment(
        self, group: ClassicGroup, assignment: Mapping[str, bytes], now: int
    ) -> None:
        for member in group.members.values():
            member.assignment = assignment.get(member.member_id, b"")
            result = SyncResult(
                ec.NONE, group.protocol_type, group.protocol_name, member.assignment
            )
            if group.invoke_sync(member, result):
                self._schedule_heartbeat(member, now, member.session_timeout_ms)

    def _validate_member(
        self, group: ClassicGroup, member_id: str, instance_id: str | None, generation_id: int
    ) -> int:
        if group.is_state(GroupState.DEAD):
            return ec.COORDINATOR_NOT_AVAILABLE
        error = group.current_member_error(member_id, instance_id)
        if error == ec.NONE and generation_id != group.generation_id:
            error = ec.ILLEGAL_GENERATION
        return error

    # ---- Heartbeat and LeaveGroup -------------------------------------------------------

    def heartbeat(
        self, group_id: str, member_id: str, instance_id: str | None, generation_id: int, now: int
    ) -> int:
        group = self.groups.get(group_id)
        if group is None:
            return ec.UNKNOWN_MEMBER_ID
        error = self._validate_member(group, member_id, instance_id, generation_id)
        if error != ec.NONE:
            return error
        if group.is_state(GroupState.EMPTY):
            return ec.UNKNOWN_MEMBER_ID
        member = group.members[member_id]
        self._schedule_heartbeat(member, now, member.session_timeout_ms)
        if group.is_state(GroupState.PREPARING_REBALANCE):
            return ec.REBALANCE_IN_PROGRESS
        return ec.NONE

    def leave(
        self, group_id: str, leaving: Sequence[tuple[str, str | None, str | None]], now: int
    ) -> tuple[int, list[int]]:
        """(top-level error, per leaving (member id, instance id, reason) error)."""
        group = self.groups.get(group_id)
        if group is None:
            return ec.NONE, [ec.UNKNOWN_MEMBER_ID for _ in leaving]
        if group.is_state(GroupState.DEAD):
            return ec.COORDINATOR_NOT_AVAILABLE, []
        errors = []
        for member_id, instance_id, reason in leaving:
            why = reason or "not provided"
            if member_id == UNKNOWN_MEMBER_ID:
                # Administrative removal by instance id (KIP-345).
                current = group.static_member_id(instance_id)
                if current is None:
                    errors.append(ec.UNKNOWN_MEMBER_ID)
                else:
                    self._remove_member(group, group.members[current], now, why)
                    errors.append(ec.NONE)
            elif group.is_pending(member_id):
                group.remove(member_id)
                if group.is_state(GroupState.PREPARING_REBALANCE):
                    self._try_complete_join(group, now)
                errors.append(ec.NONE)
            elif group.is_static_member_fenced(instance_id, member_id):
                errors.append(ec.FENCED_INSTANCE_ID)
            elif group.has(member_id):
                self._remove_member(group, group.members[member_id], now, why)
                errors.append(ec.NONE)
            else:
                errors.append(ec.UNKNOWN_MEMBER_ID)
        return ec.NONE, errors

    def _remove_member(self, group: ClassicGroup, member: Member, now: int, reason: str) -> None:
        # A new member may still wait on its JoinGroup: answer it before it goes.
        group.invoke_join(member, JoinResult(ec.UNKNOWN_MEMBER_ID, UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        _log.info(
            "group.member_removed", group=group.group_id, member=member.member_id, reason=reason
        )
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, now, f"removing {member.member_id}: {reason}")
        elif group.is_state(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group, now)

    @staticmethod
    def _schedule_heartbeat(member: Member, now: int, timeout_ms: int) -> None:
        member.heartbeat_satisfied = False
        member.heartbeat_deadline = now + timeout_ms

    # ---- timers --------------------------------------------------------------------------

    @staticmethod
    def next_deadline(group: ClassicGroup) -> int | None:
        times = [t for t in (group.join_deadline, group.sync_deadline) if t is not None]
        times.extend(group.pending_members.values())
        times.extend(m.heartbeat_deadline for m in group.members.values() if m.heartbeat_deadline)
        return min(times, default=None)

    def tick(self, group_id: str, now: int) -> None:
        """Run every deadline of the group that has passed (Kafka's purgatory expirations)."""
        group = self.groups.get(group_id)
        if group is None or group.is_state(GroupState.DEAD):
            return
        for _ in range(1000):  # each round moves a deadline forward or clears it
            if group.join_deadline is not None and group.join_deadline <= now:
                self._expire_join(group, now)
                continue
            if group.sync_deadline is not None and group.sync_deadline <= now:
                self._expire_sync(group, now)
                continue
            expired_pending = [m for m, t in group.pending_members.items() if t <= now]
            if expired_pending:
                for member_id in expired_pending:
                    group.remove(member_id)
                if group.is_state(GroupState.PREPARING_REBALANCE):
                    self._try_complete_join(group, now)
                continue
            due = [
                m
                for m in group.members.values()
                if m.heartbeat_deadline is not None and m.heartbeat_deadline <= now
            ]
            if not due:
                return
            for member in due:
                member.heartbeat_deadline = None
                if member.member_id in group.members and not member.has_satisfied_heartbeat:
                    self._remove_member(group, member, now, "heartbeat expired")

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
            self._schedule_heartbeat(member, now, member.session_timeout_ms)
        limit = self.config.offset_metadata_max_bytes
        codes: dict[TopicPartition, int] = {}
        good: dict[TopicPartition, CommittedOffset] = {}
        for tp, value in offsets.items():
            if len(value.metadata) > limit:
                codes[tp] = ec.OFFSET_METADATA_TOO_LARGE
            else:
                good[tp] = value
        if good:
            records = [
                (
                    rec.encode_offset_key(rec.OffsetKey(group_id, tp[0], tp[1])),
                    self._offset_value(v),
                )
                for tp, v in good.items()
            ]
            error = self._write(group_id, records)
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
        limit = self.config.offset_metadata_max_bytes
        codes: dict[TopicPartition, int] = {}
        good: dict[TopicPartition, CommittedOffset] = {}
        for tp, value in offsets.items():
            if len(value.metadata) > limit:
                codes[tp] = ec.OFFSET_METADATA_TOO_LARGE
            else:
                good[tp] = value
        if good:
            records = [
                (
                    rec.encode_offset_key(rec.OffsetKey(group_id, tp[0], tp[1])),
                    self._offset_value(v),
                )
                for tp, v in good.items()
            ]
            error = self.write_txn(group_id, records, producer_id, producer_epoch)
            if error == ec.NONE:
                self.pending_txn.add(producer_id, group_id, good)
            codes.update(dict.fromkeys(good, error))
        self._drop_if_unused(group)
        return codes

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
        if group.is_state(GroupState.DEAD):
            return ec.COORDINATOR_NOT_AVAILABLE
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
        records: list[Record] = [
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
                records: list[Record] = [
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
            expired = self._expired(group, now, retention)
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

    # ---- storing and loading the group -------------------------------------------------

    def _store_group(self, group: ClassicGroup, assignment: Mapping[str, bytes], now: int) -> int:
        protocol = group.protocol_name
        members = tuple(
            rec.MemberValue(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                m.metadata(protocol) if protocol is not None else b"",
                assignment.get(m.member_id, b""),
            )
            for m in group.members.values()
        )
        value = rec.GroupValue(
            group.protocol_type or "", group.generation_id, protocol, group.leader_id, now, members
        )
        version = rec.group_value_version(self.release)
        record = (
            rec.encode_group_key(rec.GroupKey(group.group_id)),
            rec.encode_group_value(value, version),
        )
        return self._write(group.group_id, [record])

    def replay(
        self, key: bytes, value: bytes | None, now: int, producer_id: int | None = None
    ) -> None:
        """Apply one record of the log (GroupMetadataManager.doLoadGroupsAndOffsets); a group
        that ends with members is Stable, its members' sessions restarting now. An offset of a
        transactional batch (`producer_id`) stays pending until its marker is replayed."""
        try:
            decoded = rec.decode_key(key)
            if isinstance(decoded, rec.OffsetKey) and producer_id is not None:
                if value is not None:
                    ov = rec.decode_offset_value(value)
                    offset = CommittedOffset(
                        ov.offset,
                        ov.leader_epoch,
                        ov.metadata,
                        ov.commit_timestamp,
                        ov.expire_timestamp if ov.expire_timestamp >= 0 else None,
                    )
                    tp = (decoded.topic, decoded.partition)
                    self.pending_txn.add(producer_id, decoded.group, {tp: offset})
                    if decoded.group not in self.groups:
                        created = ClassicGroup(decoded.group, state_timestamp=now)
                        self.groups[decoded.group] = created
            elif isinstance(decoded, rec.OffsetKey):
                group = self.groups.get(decoded.group)
                tp = (decoded.topic, decoded.partition)
                if value is None:
                    if group is not None:
                        group.offsets.pop(tp, None)
                    return
                ov = rec.decode_offset_value(value)
                if group is None:
                    group = self.groups[decoded.group] = ClassicGroup(
                        decoded.group, state_timestamp=now
                    )
                group.offsets[tp] = CommittedOffset(
                    ov.offset,
                    ov.leader_epoch,
                    ov.metadata,
                    ov.commit_timestamp,
                    ov.expire_timestamp if ov.expire_timestamp >= 0 else None,
                )
            elif isinstance(decoded, rec.GroupKey):
                if value is None:
                    self.groups.pop(decoded.group, None)
                    return
                self._replay_group(decoded.group, rec.decode_group_value(value), now)
        except rec.RecordFormatError as e:
            _log.warning("group.unreadable_record", reason=str(e))

    def _replay_group(self, group_id: str, gv: rec.GroupValue, now: int) -> None:
        old = self.groups.get(group_id)
        group = ClassicGroup(
            group_id,
            state_timestamp=gv.current_state_timestamp if gv.current_state_timestamp >= 0 else now,
            generation_id=gv.generation,
            protocol_type=gv.protocol_type or None,
            protocol_name=gv.protocol,
            leader_id=gv.leader,
        )
        if old is not None:
            group.offsets = old.offsets
        for mv in gv.members:
            member = Member(
                mv.member_id,
                mv.group_instance_id,
                mv.client_id,
                mv.client_host,
                mv.rebalance_timeout if mv.rebalance_timeout >= 0 else mv.session_timeout,
                mv.session_timeout,
                gv.protocol_type,
                [(gv.protocol or "", mv.subscription)],
                assignment=mv.assignment,
            )
            group.add(member, None)
        group.leader_id = gv.leader if gv.leader in group.members else group.leader_id
        if group.members:
            group.state = GroupState.STABLE
            group.subscribed_topics = group.compute_subscribed_topics()
        self.groups[group_id] = group

    def loaded(self, group_ids: Iterable[str], now: int) -> None:
        """After a load: every member's session starts now (Kafka's onGroupLoaded)."""
        for group_id in group_ids:
            group = self.groups.get(group_id)
            if group is None:
                continue
            for member in group.members.values():
                self._schedule_heartbeat(member, now, member.session_timeout_ms)

    def unload(self, group_ids: Iterable[str]) -> None:
        """The partition moved away: waiting members learn NOT_COORDINATOR (Kafka's
        onGroupUnloaded) and the groups are forgotten here."""
        group_ids = list(group_ids)
        self.pending_txn.drop_groups(set(group_ids))
        for group_id in group_ids:
            group = self.groups.pop(group_id, None)
            if group is None:
                continue
            previous = group.state
            group.state = GroupState.DEAD
            for member in group.members.values():
                if previous is GroupState.PREPARING_REBALANCE:
                    group.invoke_join(member, JoinResult(ec.NOT_COORDINATOR, member.member_id))
                elif previous in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                    group.invoke_sync(member, SyncResult(ec.NOT_COORDINATOR))


def group_config(value: Callable[[str], str | None]) -> GroupConfig:
    """The coordinator's settings from a broker config lookup (``BrokerConfig.configured``);
    a key the release lacks keeps Kafka's default."""

    def num(name: str, default: int) -> int:
        text = value(name)
        try:
            return int(text.strip()) if text is not None else default
        except ValueError:
            return default

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
    )
