"""Partition leadership on the controller: state writes, broker failure and return, elections.

Runs on the controller task (`zkbroker.broker.controller.controller`) with the pure rules of
`zkbroker.broker.rules.leader_election`, as Kafka 2.8 does (docs/kafka-behaviour.md §6, §10.3,
§10.5): `write_states` (fenced conditional sets, one multi per topic chunk, pipelined; a
BADVERSION re-reads the topic's states and applies the rule again), broker failure and return
(returning replicas rejoin ISRs after `--replica-catchup-ms`, standing in for the leader's
AlterIsr since nothing is replicated), preferred and unclean elections for ElectLeaders,
`/admin/preferred_replica_election` and the auto rebalance. Loops over many partitions yield to
the event loop (`zkbroker.broker.asyncutil.Pacer`), so other brokers of the process keep answering.

Not here: reassignments (`zkbroker.broker.controller.reassignment`), topic creation and
deletion (`zkbroker.broker.controller.topics`), the ControlledShutdown request
(`zkbroker.broker.controller.controlled_shutdown`; a stopped zkbroker broker does not send it and
leaves as a crashed one does).
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from zkbroker.broker.asyncutil import GATHER_LIMIT, Pacer, collect, gather_bounded
from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.rules import leader_election as rules
from zkbroker.broker.rules.api_error import ApiError
from zkbroker.broker.rules.config_catalog import topic_config_keys
from zkbroker.zk_layout import (
    LEADER_NONE,
    BadVersionError,
    ConfigEntityNode,
    NoNodeError,
    PartitionState,
    PartitionStateNode,
    PreferredReplicaElectionNode,
    ZnodeFormatError,
)

if TYPE_CHECKING:
    from zkbroker.broker.controller.controller import Controller

log = get_logger(__name__)

TP = tuple[str, int]
StateRule = Callable[[PartitionState], PartitionState | None]

# ZooKeeper refuses a request above jute.maxbuffer (1 MB); a state set is ~150 bytes.
_MAX_OPS_PER_MULTI = 500
# As many multis in flight as other bulk steps keep (ZooKeeper commits what is queued
# together); 16 made a 40,000-leader failover take 4.0 s instead of 1.1 s.
_MULTIS_IN_FLIGHT = GATHER_LIMIT
_MAX_RETRIES = 10

# ElectLeaders' election_type; any other value is UNCLEAN (1).
PREFERRED = 0


# ---- writing states ----------------------------------------------------------------------


async def write_states(
    controller: Controller, rules_by_partition: dict[TP, StateRule]
) -> dict[TP, PartitionState]:
    """Apply each partition's rule to its current state and write what changed.

    Returns the states written. Partitions without a state, or whose rule answers None (or
    the same state), are left alone."""
    written: dict[TP, PartitionState] = {}
    pending = dict(rules_by_partition)
    pacer = Pacer()  # a broker leading 40,000 partitions dies: 40,000 rules, 80 multis
    for _ in range(_MAX_RETRIES):
        by_topic: dict[str, dict[int, tuple[PartitionState, int]]] = defaultdict(dict)
        for (topic, partition), rule in pending.items():
            if pacer.due():
                await pacer.pause()
            current = controller.state.partition_states.get((topic, partition))
            if current is None:
                continue
            new = rule(current[0])
            if new is not None and new != current[0]:
                by_topic[topic][partition] = (new, current[1])
        chunks = [chunk for topic, updates in by_topic.items() for chunk in _chunks(topic, updates)]
        # Each multi's first step encodes its 500 states and queues the request (a few ms):
        # started one per loop iteration, so other clients are served between two starts.
        outcomes = await gather_bounded(
            (_write_chunk(controller, t, u) for t, u in chunks),
            _MULTIS_IN_FLIGHT,
            stagger=True,
        )
        retry: list[TP] = []
        for (topic, updates), ok in zip(chunks, outcomes, strict=True):
            if ok:
                written.update({(topic, p): s for p, (s, _) in updates.items()})
            else:
                retry.extend((topic, p) for p in updates)
        if not retry:
            return written
        await reload_states(controller, retry)
        pending = {tp: pending[tp] for tp in retry}
    log.error("controller.state_write_gave_up", partitions=len(pending))
    return written


def _chunks(
    topic: str, updates: dict[int, tuple[PartitionState, int]]
) -> list[tuple[str, dict[int, tuple[PartitionState, int]]]]:
    items = sorted(updates.items())
    return [
        (topic, dict(items[i : i + _MAX_OPS_PER_MULTI]))
        for i in range(0, len(items), _MAX_OPS_PER_MULTI)
    ]


async def _write_chunk(
    controller: Controller, topic: str, updates: dict[int, tuple[PartitionState, int]]
) -> bool:
    """One fenced multi; False when a state changed under us (re-read and retry)."""
    release = controller.release
    tx = controller.store.fenced(controller.context.epoch_zk_version)
    for partition, (new, version) in updates.items():
        tx.set(
            PartitionStateNode.path(topic, partition),
            PartitionStateNode.encode(new, release),
            version,
        )
    try:
        stats = await tx.commit()
    except (BadVersionError, NoNodeError):
        return False
    for (partition, (new, _)), stat in zip(updates.items(), stats, strict=True):
        controller.state.partition_states[(topic, partition)] = (new, stat.version)
        if controller.image is not None:
            controller.image.put_partition_state(topic, partition, new, stat.version)
    return True


async def reload_states(controller: Controller, partitions: Iterable[TP]) -> None:
    keys = list(partitions)
    reads = await controller.store.get_many([PartitionStateNode.path(t, p) for t, p in keys])
    for key, node in zip(keys, reads, strict=True):
        if node is None:
            controller.state.partition_states.pop(key, None)
            continue
        try:
            decoded = PartitionStateNode.decode_at(node[0], *key)
        except ZnodeFormatError:
            continue
        controller.state.partition_states[key] = (decoded, node[1].version)


def isr_removal(replicas: list[int], epoch: int) -> StateRule:
    """The rule taking `replicas` out of the ISR (OfflineReplica)."""
    return lambda s: rules.remove_all_from_isr(s, replicas, epoch)


def _preferred_rule(replicas: tuple[int, ...], live: set[int], epoch: int) -> StateRule:
    return lambda s: rules.preferred_leader(s, replicas, live, epoch)


def replicas_of(controller: Controller, tp: TP) -> tuple[int, ...]:
    record = controller.state.topics.get(tp[0])
    if record is None:
        return ()
    return record.assignment.partitions.get(tp[1], ())


# ---- offline partitions and broker changes ----------------------------------------------


async def unclean_enabled(controller: Controller, topics: Iterable[str]) -> dict[str, bool]:
    """Each topic's effective unclean.leader.election.enable: its override in
    `/config/topics/<t>`, else the controller broker's (static or dynamic) value."""
    names = sorted(set(topics))
    if not names:
        return {}
    key = topic_config_keys(controller.release)["unclean.leader.election.enable"]
    fallback = (controller.broker_config().topic_value(key) or "false").lower() == "true"
    reads = await controller.store.get_many([ConfigEntityNode.topic(t) for t in names])
    out: dict[str, bool] = {}
    for name, node in zip(names, reads, strict=True):
        value: str | None = None
        if node is not None:
            try:
                value = ConfigEntityNode.decode(node[0]).get(key.name)
            except ZnodeFormatError:
                value = None
        out[name] = fallback if value is None else value.strip().lower() == "true"
    return out


def offline_partitions(controller: Controller) -> list[TP]:
    """Partitions without a live leader, of topics not being deleted."""
    state = controller.state
    return sorted(
        tp
        for tp, (s, _) in state.partition_states.items()
        if (s.leader == LEADER_NONE or s.leader not in state.live_brokers)
        and tp[0] not in state.topics_to_delete
        and tp[0] in state.topics
    )


async def elect_offline(
    controller: Controller, partitions: list[TP], *, force_unclean: bool = False
) -> dict[TP, PartitionState]:
    """OfflinePartitionLeaderElectionStrategy for `partitions`; returns the new states."""
    state = controller.state
    live = state.live_brokers
    epoch = controller.context.epoch
    stuck = await collect(
        tp
        for tp in partitions
        if tp in state.partition_states
        and not rules.has_live_isr_replica(
            state.partition_states[tp][0], replicas_of(controller, tp), live
        )
    )
    unclean = (
        {t: True for t, _ in stuck}
        if force_unclean
        else await unclean_enabled(controller, (t for t, _ in stuck))
    )

    def rule_for(tp: TP) -> StateRule:
        replicas = replicas_of(controller, tp)
        allow = unclean.get(tp[0], False)
        return lambda s: rules.offline_leader(s, replicas, live, allow, epoch)

    written = await write_states(
        controller, {tp: rule_for(tp) for tp in partitions if tp in state.partition_states}
    )
    failed = [f"{t}-{p}" for t, p in partitions if (t, p) not in written]
    if failed:
        log.error("controller.partitions_offline", partitions=failed[:20], count=len(failed))
    return written


async def on_brokers_failed(controller: Controller, dead: set[int]) -> None:
    """onBrokerFailure: new leaders for partitions the dead brokers led, then the dead
    replicas leave the ISRs."""
    state = controller.state
    pacer = Pacer()  # every partition of the cluster is looked at, twice
    led = await collect(
        (
            tp
            for tp, (s, _) in list(state.partition_states.items())
            if s.leader in dead and tp[0] not in state.topics_to_delete and tp[0] in state.topics
        ),
        pacer,
    )
    await elect_offline(controller, sorted(led))
    epoch = controller.context.epoch
    removals: dict[TP, StateRule] = {}
    for tp, (s, _) in list(state.partition_states.items()):
        if pacer.due():
            await pacer.pause()
        if tp[0] in state.topics_to_delete:
            continue
        leaving = sorted(dead & set(s.isr) & set(replicas_of(controller, tp)))
        if leaving:
            removals[tp] = isr_removal(leaving, epoch)
    await write_states(controller, removals)
    log.info(
        "controller.brokers_failed",
        brokers=sorted(dead),
        new_leaders=len(led),
        isr_shrinks=len(removals),
    )


async def shrink_dead_followers(controller: Controller) -> None:
    """Failover: a new controller does not take the replicas of brokers that died before it
    out of the ISRs (Kafka's replica state machine starts them as ineligible); their live
    leaders do, once the followers stop fetching (replica.lag.time.max.ms; here at once)."""
    state = controller.state
    live = state.live_brokers
    epoch = controller.context.epoch
    stale = await collect(
        tp
        for tp, (s, _) in list(state.partition_states.items())
        if s.leader in live and not set(s.isr) <= live
    )
    await write_states(controller, {tp: lambda s: rules.shrink_isr(s, live, epoch) for tp in stale})


async def on_brokers_started(controller: Controller, new: set[int]) -> None:
    """onBrokerStartup: offline partitions are elected again. The new brokers' replicas rejoin
    their ISRs through their leaders once they caught up (`zkbroker.broker.replication`)."""
    await elect_offline(controller, offline_partitions(controller))


# ---- preferred and unclean elections -----------------------------------------------------


@dataclass(frozen=True)
class ElectionOutcome:
    """Per-partition answer of a leader election: a leader, or an error."""

    leader: int | None = None
    error: ApiError | None = None


_NOT_NEEDED = ElectionOutcome(error=ApiError.with_default_message(error_codes.ELECTION_NOT_NEEDED))


async def elect_leaders(
    controller: Controller, partitions: Iterable[TP], election_type: int
) -> dict[TP, ElectionOutcome]:
    """processReplicaLeaderElection for an admin request (or a ZooKeeper/auto trigger)."""
    state = controller.state
    live = state.live_brokers
    epoch = controller.context.epoch
    results: dict[TP, ElectionOutcome] = {}
    electable: list[TP] = []
    for tp in dict.fromkeys(partitions):
        current = state.partition_states.get(tp)
        if tp[0] not in state.topics or not replicas_of(controller, tp) or current is None:
            results[tp] = ElectionOutcome(
                error=ApiError(
                    error_codes.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
                )
            )
        elif tp[0] in state.topics_to_delete:
            results[tp] = ElectionOutcome(
                error=ApiError(error_codes.INVALID_TOPIC_EXCEPTION, "The topic is being deleted")
            )
        elif election_type == PREFERRED:
            needed = current[0].leader != replicas_of(controller, tp)[0]
            if needed:
                electable.append(tp)
            else:
                results[tp] = _NOT_NEEDED
        else:
            leader = current[0].leader
            if leader == LEADER_NONE or leader not in live:
                electable.append(tp)
            else:
                results[tp] = _NOT_NEEDED
    if election_type == PREFERRED:
        written = await write_states(
            controller,
            {tp: _preferred_rule(replicas_of(controller, tp), live, epoch) for tp in electable},
        )
        strategy = "PreferredReplicaPartitionLeaderElectionStrategy"
        failure = error_codes.PREFERRED_LEADER_NOT_AVAILABLE
    else:
        written = await elect_offline(controller, electable, force_unclean=True)
        strategy = "OfflinePartitionLeaderElectionStrategy(true)"
        failure = error_codes.ELIGIBLE_LEADERS_NOT_AVAILABLE
    for tp in electable:
        if tp in written:
            results[tp] = ElectionOutcome(leader=written[tp].leader)
        else:
            results[tp] = ElectionOutcome(
                error=ApiError(
                    failure,
                    f"Failed to elect leader for partition {tp[0]}-{tp[1]} "
                    f"under strategy {strategy}",
                )
            )
    return results


async def on_preferred_election_node(controller: Controller) -> None:
    """`/admin/preferred_replica_election` appeared: elect what it lists, then delete it
    whatever the outcome. A node whose JSON lacks `partitions` stays (Kafka throws)."""
    path = PreferredReplicaElectionNode.path()
    node = await controller.store.get(path)
    if node is None:
        return
    try:
        listed = PreferredReplicaElectionNode.decode(node[0])
    except ZnodeFormatError as e:
        log.error("controller.preferred_election_undecodable", reason=str(e))
        return
    try:
        outcomes = await elect_leaders(
            controller, ((tp.topic, tp.partition) for tp in listed), PREFERRED
        )
        log.info(
            "controller.preferred_election",
            trigger="zookeeper",
            elected=sorted(f"{t}-{p}" for (t, p), o in outcomes.items() if o.leader is not None),
        )
    finally:
        tx = controller.store.fenced(controller.context.epoch_zk_version)
        tx.delete(path)
        with contextlib.suppress(NoNodeError):
            await tx.commit()


async def auto_rebalance(controller: Controller) -> None:
    """checkAndTriggerAutoLeaderRebalance: per preferred broker, if more than
    leader.imbalance.per.broker.percentage of its partitions are led by others, elect the
    preferred replica where it can lead (alive and in the ISR); not while any partition is
    being reassigned."""
    state = controller.state
    if state.reassigning:
        return
    by_preferred: dict[int, list[TP]] = defaultdict(list)
    # Every partition of the cluster is looked at: in slices (only this event reads or
    # changes the controller's state meanwhile).
    pacer = Pacer()
    for topic, record in list(state.topics.items()):
        if topic in state.topics_to_delete:
            continue
        for partition, replicas in record.assignment.partitions.items():
            if replicas:
                by_preferred[replicas[0]].append((topic, partition))
            if pacer.due():
                await pacer.pause()
    threshold = controller.settings.leader_imbalance_per_broker_percentage / 100
    live = state.live_brokers
    candidates: list[TP] = []
    for broker, tps in sorted(by_preferred.items()):
        not_preferred = await collect(
            (
                tp
                for tp in tps
                if tp in state.partition_states and state.partition_states[tp][0].leader != broker
            ),
            pacer,
        )
        if len(not_preferred) / len(tps) <= threshold or broker not in live:
            continue
        candidates.extend(
            await collect(
                (
                    tp
                    for tp in not_preferred
                    if rules.preferred_leader(
                        state.partition_states[tp][0], replicas_of(controller, tp), live, 0
                    )
                    is not None
                ),
                pacer,
            )
        )
    if candidates:
        outcomes = await elect_leaders(controller, candidates, PREFERRED)
        log.info(
            "controller.auto_rebalance",
            elected=sorted(f"{t}-{p}" for (t, p), o in outcomes.items() if o.leader is not None),
        )
