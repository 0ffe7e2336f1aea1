"""One classic consumer group as its coordinator holds it: members, state, protocol votes, offsets.

Follows Kafka 3.9's ``GroupMetadata.scala`` and ``MemberMetadata.scala`` (docs/kafka-behaviour.md
§16): the five states and their allowed transitions, the leader (the first member to join, or
the first remaining one when it leaves), static members by ``group.instance.id`` (KIP-345),
pending members that were handed a member id with MEMBER_ID_REQUIRED (KIP-394), members owing
a SyncGroup, the protocol chosen by votes among the protocols every member supports (the
protocols are opaque to the coordinator: eager and cooperative (KIP-429) assignors look the
same), the topics a ``consumer`` group subscribes to (decoded from the chosen protocol's
subscriptions; None when one cannot be read), and the group's committed offsets.

A member's pending JoinGroup or SyncGroup is a plain callback, so the state here is pure data
a unit test drives without an event loop; deadlines are absolute milliseconds the caller's
clock defines.

Deliberately not here: the coordinator's decisions (`membership`, `offsets`, joined by
`state_machine`), the offsets topic's keys and values (`offsets_topic_codec`) and anything
asynchronous (``zkbroker.broker.groups.coordinator``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.consumer_protocol import decode_subscription

CONSUMER_PROTOCOL_TYPE = "consumer"


class GroupState(StrEnum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_E, _P, _C, _S, _D = (
    GroupState.EMPTY,
    GroupState.PREPARING_REBALANCE,
    GroupState.COMPLETING_REBALANCE,
    GroupState.STABLE,
    GroupState.DEAD,
)
# Kafka's GroupState.validPreviousStates.
_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    _E: frozenset({_P}),
    _P: frozenset({_S, _C, _E}),
    _C: frozenset({_P}),
    _S: frozenset({_C}),
    _D: frozenset({_S, _P, _C, _E, _D}),
}


@dataclass
class JoinResult:
    error: int
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    skip_assignment: bool = False
    # (member id, group instance id, metadata of the chosen protocol), for the leader only
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


@dataclass
class SyncResult:
    error: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


JoinCallback = Callable[[JoinResult], None]
SyncCallback = Callable[[SyncResult], None]


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    awaiting_join: JoinCallback | None = None
    awaiting_sync: SyncCallback | None = None
    # Joined but not yet through a completed join phase (Kafka's isNew): expires after
    # NewMemberJoinTimeoutMs rather than the session timeout.
    is_new: bool = False
    heartbeat_satisfied: bool = False
    heartbeat_deadline: int | None = None

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def has_satisfied_heartbeat(self) -> bool:
        if self.is_new:
            return self.heartbeat_satisfied
        if self.awaiting_join is not None or self.awaiting_sync is not None:
            return True  # members waiting on a rebalance owe no heartbeat
        return self.heartbeat_satisfied

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise KeyError(protocol)

    def matches(self, protocols: Sequence[tuple[str, bytes]]) -> bool:
        return list(protocols) == list(self.protocols)

    def vote(self, candidates: set[str]) -> str:
        """This member's most preferred protocol among ``candidates``."""
        return next(name for name, _ in self.protocols if name in candidates)


@dataclass
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None = None


TopicPartition = tuple[str, int]


@dataclass
class ClassicGroup:
    group_id: str
    state_timestamp: int
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    # member id handed out with MEMBER_ID_REQUIRED -> when it expires
    pending_members: dict[str, int] = field(default_factory=dict)
    pending_sync: set[str] = field(default_factory=set)
    supported_protocols: Counter[str] = field(default_factory=Counter)
    num_awaiting_join: int = 0
    new_member_added: bool = False
    subscribed_topics: set[str] | None = None
    offsets: dict[TopicPartition, CommittedOffset] = field(default_factory=dict)
    # The delayed join (Kafka's DelayedJoin / InitialDelayedJoin) and delayed sync.
    join_deadline: int | None = None
    initial_join: bool = False
    initial_delay_ms: int = 0
    initial_remaining_ms: int = 0
    sync_deadline: int | None = None

    # ---- state ---------------------------------------------------------------------------

    def is_state(self, state: GroupState) -> bool:
        return self.state is state

    def transition(self, target: GroupState, now: int) -> None:
        if self.state not in _VALID_PREVIOUS[target]:
            raise RuntimeError(f"group {self.group_id}: {self.state.value} -> {target.value}")
        self.state = target
        self.state_timestamp = now

    @property
    def can_rebalance(self) -> bool:
        return self.state in (_S, _C, _E)

    # ---- members -------------------------------------------------------------------------

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def is_pending(self, member_id: str) -> bool:
        return member_id in self.pending_members

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def is_static_member_fenced(self, instance_id: str | None, member_id: str) -> bool:
        current = self.static_member_id(instance_id)
        return current is not None and current != member_id

    def current_member_error(self, member_id: str, instance_id: str | None) -> int:
        """Kafka's validateCurrentMember: a named instance must exist (UNKNOWN_MEMBER_ID) and
        be held by ``member_id`` (FENCED_INSTANCE_ID); the member id must be a member."""
        if instance_id is not None:
            current = self.static_members.get(instance_id)
            if current is None:
                return error_codes.UNKNOWN_MEMBER_ID
            if current != member_id:
                return error_codes.FENCED_INSTANCE_ID
        return error_codes.NONE if member_id in self.members else error_codes.UNKNOWN_MEMBER_ID

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def has_all_members_joined(self) -> bool:
        return self.num_awaiting_join == len(self.members) and not self.pending_members

    def add(self, member: Member, callback: JoinCallback | None) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.supported_protocols.update(name for name, _ in member.protocols)
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        member.awaiting_join = callback
        if callback is not None:
            self.num_awaiting_join += 1
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self.supported_protocols.subtract(name for name, _ in member.protocols)
            self.supported_protocols += Counter()  # drop zero counts
            if member.awaiting_join is not None:
                self.num_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_members.pop(member_id, None)
        self.pending_sync.discard(member_id)

    def update_member(
        self,
        member: Member,
        protocols: list[tuple[str, bytes]],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        callback: JoinCallback | None,
    ) -> None:
        self.supported_protocols.subtract(name for name, _ in member.protocols)
        self.supported_protocols.update(name for name, _ in protocols)
        self.supported_protocols += Counter()
        member.protocols = list(protocols)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if callback is not None and member.awaiting_join is None:
            self.num_awaiting_join += 1
        elif callback is None and member.awaiting_join is not None:
            self.num_awaiting_join -= 1
        member.awaiting_join = callback

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        member = self.members.pop(old_id)
        # A duplicate instance still waiting on the old id is fenced at once.
        self.invoke_join(member, JoinResult(error=error_codes.FENCED_INSTANCE_ID, member_id=old_id))
        self.invoke_sync(member, SyncResult(error=error_codes.FENCED_INSTANCE_ID))
        member.member_id = new_id
        self.members[new_id] = member
        if self.is_leader(old_id):
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        return member

    def invoke_join(self, member: Member, result: JoinResult) -> None:
        callback, member.awaiting_join = member.awaiting_join, None
        if callback is not None:
            self.num_awaiting_join -= 1
            callback(result)

    def invoke_sync(self, member: Member, result: SyncResult) -> bool:
        callback, member.awaiting_sync = member.awaiting_sync, None
        if callback is None:
            return False
        callback(result)
        return True

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if m.awaiting_join is None]

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else make any rejoined member leader; False when
        there is no leader or nobody rejoined."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join is not None:
            return True
        for member_id, member in self.members.items():
            if member.awaiting_join is not None:
                self.leader_id = member_id
                return True
        return False

    # ---- protocols -----------------------------------------------------------------------

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.supported_protocols.items() if count == n}

    def select_protocol(self) -> str:
        candidates = self.candidate_protocols()
        votes = Counter(m.vote(candidates) for m in self.members.values())
        # Ties go to the protocol voted for first (Kafka's pick among ties is unspecified).
        best = max(votes.values())
        return next(p for p in votes if votes[p] == best)

    def supports_protocols(
        self, protocol_type: str, protocols: Sequence[tuple[str, bytes]]
    ) -> bool:
        if self.is_state(GroupState.EMPTY):
            return bool(protocol_type) and bool(protocols)
        n = len(self.members)
        return self.protocol_type == protocol_type and any(
            self.supported_protocols.get(name, 0) == n for name, _ in protocols
        )

    def current_member_metadata(self) -> list[tuple[str, str | None, bytes]]:
        protocol = self.protocol_name or ""
        return [
            (m.member_id, m.group_instance_id, m.metadata(protocol)) for m in self.members.values()
        ]

    def compute_subscribed_topics(self) -> set[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            try:
                topics.update(decode_subscription(member.metadata(self.protocol_name))[1])
            except Exception:  # an unreadable subscription: the topics are unknown
                return None
        return topics

    def is_subscribed_to(self, topic: str) -> bool:
        return True if self.subscribed_topics is None else topic in self.subscribed_topics

    def init_next_generation(self, now: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition(GroupState.COMPLETING_REBALANCE, now)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition(GroupState.EMPTY, now)
        self.pending_sync.clear()
