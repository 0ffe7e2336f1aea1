"""Classic group membership: the group state machine's decisions, pure, with the time passed in.

JoinGroup, SyncGroup, Heartbeat, LeaveGroup, the rebalance (the delayed join with
group.initial.rebalance.delay.ms, the delayed sync), member expiry and the group's own record
(storing and replaying the group's metadata): Kafka 3.9's ``GroupCoordinator.scala``
membership side and ``GroupMetadataManager``'s group records, with KIP-345, KIP-394, KIP-429,
KIP-559, KIP-800 and KIP-814 (docs/kafka-behaviour.md §16). Kafka's purgatories are deadlines
on the group: the caller runs `GroupMembership.tick` when `next_deadline` passes.

Deliberately not here: committed offsets (commit, fetch, delete, expiry, transactional
offsets: ``zkbroker.broker.rules.groups.offsets``), timers, the log and the wire
(``zkbroker.broker.groups.coordinator``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.rules.groups import offsets_topic_codec as rec
from zkbroker.broker.rules.groups.classic_group import (
    ClassicGroup,
    GroupState,
    JoinCallback,
    JoinResult,
    Member,
    SyncCallback,
    SyncResult,
)
from zkbroker.broker.rules.groups.config import GroupsSide
from zkbroker.zk_layout.release import Release, release_at_least

_log = get_logger(__name__)

# Rules that arrived with a release (GroupCoordinator.scala at each tag, §16). A release line
# stands for its last patch release, so a rule of 2.8.1 is 2.8's and one of 2.1.1 is 2.1's.
# KAFKA-7610 (2.1.1, 2.2.0): a new member's session is NewMemberJoinTimeoutMs until it joins.
NEW_MEMBER_TIMEOUT_SINCE: Release = (2, 1)
# KAFKA-8386 (2.3.0): a Dead group answers COORDINATOR_NOT_AVAILABLE (before, UNKNOWN_MEMBER_ID),
# and Heartbeat checks the member and generation before the group's state.
DEAD_GROUP_RETRY_SINCE: Release = (2, 3)
# KAFKA-9885 (2.6.1, 2.7.0): group.max.size counts members awaiting the join (acceptJoiningMember).
ACCEPT_JOINING_SINCE: Release = (2, 6)
# KAFKA-10134 (2.7.0): a Heartbeat in CompletingRebalance is a heartbeat (NONE, session kept).
HEARTBEAT_WHILE_SYNCING_SINCE: Release = (2, 7)
# KAFKA-12890 (2.8.1, 3.0.0): members owe a SyncGroup within the rebalance timeout.
PENDING_SYNC_SINCE: Release = (2, 8)

# Kafka's GroupCoordinator.NewMemberJoinTimeoutMs.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
UNKNOWN_MEMBER_ID = ""


def schedule_heartbeat(member: Member, now: int, timeout_ms: int) -> None:
    """The member's session expires `timeout_ms` from now unless it heartbeats (Kafka's
    completeAndScheduleNextHeartbeatExpiration)."""
    member.heartbeat_satisfied = False
    member.heartbeat_deadline = now + timeout_ms


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


class GroupMembership(GroupsSide):
    """The members of every classic group of the partitions one coordinator owns: one base of
    ``zkbroker.broker.rules.groups.state_machine.GroupStateMachine`` (the other, the offsets
    side, is ``zkbroker.broker.rules.groups.offsets``)."""

    # ---- lookups -------------------------------------------------------------------------

    def group(self, group_id: str) -> ClassicGroup | None:
        found = self.groups.get(group_id)
        return found

    def _dead_group_error(self) -> int:
        """What a request for a Dead group (being unloaded or deleted) gets: before 2.3 the
        member starts over with UNKNOWN_MEMBER_ID, from 2.3 it looks the coordinator up."""
        if release_at_least(self.release, DEAD_GROUP_RETRY_SINCE):
            return ec.COORDINATOR_NOT_AVAILABLE
        return ec.UNKNOWN_MEMBER_ID

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
        if not release_at_least(self.release, ACCEPT_JOINING_SINCE):
            # 2.2-2.6.0: a new member is refused at the cap; a loaded group over it sheds the
            # members that have not rejoined yet.
            member = group.members.get(member_id)
            if member is not None:
                return group.size <= limit or member.awaiting_join is not None
            return member_id != UNKNOWN_MEMBER_ID or group.size < limit
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
            answer(JoinResult(self._dead_group_error(), UNKNOWN_MEMBER_ID))
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
            answer(JoinResult(self._dead_group_error(), member_id))
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
        # Before KAFKA-7610 its session started only when the join phase completed.
        if release_at_least(self.release, NEW_MEMBER_TIMEOUT_SINCE):
            schedule_heartbeat(member, now, NEW_MEMBER_JOIN_TIMEOUT_MS)
        _log.debug("group.member_added", group=group.group_id, member=member_id, reason=join.reason)
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
        schedule_heartbeat(member, now, member.session_timeout_ms)
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
                    schedule_heartbeat(back, now, back.session_timeout_ms)
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
            schedule_heartbeat(member, now, member.session_timeout_ms)
            member.is_new = False
            if release_at_least(self.release, PENDING_SYNC_SINCE):
                group.pending_sync.add(member.member_id)
        if release_at_least(self.release, PENDING_SYNC_SINCE):
            # Before KAFKA-12890 a group waits for the leader's SyncGroup as long as sessions
            # last: a member that never syncs is removed only by its session timeout.
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
            schedule_heartbeat(member, now, member.session_timeout_ms)
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
                schedule_heartbeat(member, now, member.session_timeout_ms)

    def _validate_member(
        self, group: ClassicGroup, member_id: str, instance_id: str | None, generation_id: int
    ) -> int:
        if group.is_state(GroupState.DEAD):
            return self._dead_group_error()
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
        if not release_at_least(self.release, DEAD_GROUP_RETRY_SINCE):
            # Before 2.3 the state decides first: Dead and Empty know no member, and while
            # the leader's assignment is awaited neither the generation nor the session counts.
            if group.state in (GroupState.DEAD, GroupState.EMPTY) or not group.has(member_id):
                return ec.UNKNOWN_MEMBER_ID
            if group.is_state(GroupState.COMPLETING_REBALANCE):
                return ec.REBALANCE_IN_PROGRESS
        error = self._validate_member(group, member_id, instance_id, generation_id)
        if error != ec.NONE:
            return error
        if group.is_state(GroupState.EMPTY):
            return ec.UNKNOWN_MEMBER_ID
        if group.is_state(GroupState.COMPLETING_REBALANCE) and not release_at_least(
            self.release, HEARTBEAT_WHILE_SYNCING_SINCE
        ):
            return ec.REBALANCE_IN_PROGRESS  # 2.3-2.6: no session refresh either
        member = group.members[member_id]
        schedule_heartbeat(member, now, member.session_timeout_ms)
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
            if not release_at_least(self.release, DEAD_GROUP_RETRY_SINCE):
                return ec.NONE, [ec.UNKNOWN_MEMBER_ID for _ in leaving]
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

    def replay_group(self, key: rec.GroupKey, value: bytes | None, now: int) -> None:
        """Apply one group record of the log (GroupMetadataManager.doLoadGroupsAndOffsets): a
        tombstone forgets the group; a group that ends with members is Stable."""
        if value is None:
            self.groups.pop(key.group, None)
            return
        self._replay_group(key.group, rec.decode_group_value(value), now)

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
                schedule_heartbeat(member, now, member.session_timeout_ms)

    def unload_members(self, group_ids: Iterable[str]) -> None:
        """The partition moved away: waiting members learn NOT_COORDINATOR (Kafka's
        onGroupUnloaded) and the groups are forgotten here."""
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
