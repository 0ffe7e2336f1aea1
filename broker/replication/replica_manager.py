"""One broker's replicas: the partitions it leads and follows, each with its own log.

Kafka's ``ReplicaManager`` for one broker (docs/kafka-behaviour.md §24). Leadership comes from
the metadata image, partition by partition (the state znodes as the controller wrote them: a
ZooKeeper-mode broker's LeaderAndIsr): at a new leader epoch this broker becomes the leader
(``makeLeaders``) or a follower, truncating and fetching from the leader
(``makeFollowers``, `zkbroker.broker.replication.fetcher`). As leader it serves its followers'
fetches, raises the high watermark, expands the ISR when a follower catches up and shrinks it
every ``replica.lag.time.max.ms / 2`` (``maybeShrinkIsr``), each change written as the release
writes it (`zkbroker.broker.replication.isr_writer`); acks=all produce requests wait in
`zkbroker.broker.replication.purgatory` until the ISR has their records. The high
watermarks are checkpointed every ``replica.high.watermark.checkpoint.interval.ms``.

Not here: the Produce and Fetch handlers' validation, deleting logs (the log manager's, told by
the metadata watcher and StopReplica), the controller.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace

from zkbroker.broker.asyncutil import Pacer, cancel_and_wait
from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.log import get_logger
from zkbroker.broker.peers.client import PeerClient
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.replication import truncation
from zkbroker.broker.replication.fault_view import ReplicationFaultView
from zkbroker.broker.replication.fetch_source import (
    TP,
    EpochEnd,
    FetchedPartition,
    FetchPartition,
    FetchSource,
)
from zkbroker.broker.replication.fetcher import FetchState, ReplicaFetcher
from zkbroker.broker.replication.hosted_partition import HostedPartition, LeaderRules, Leadership
from zkbroker.broker.replication.isr_propagation import ISR_CHANGE_PROPAGATION_CHECK_INTERVAL_MS
from zkbroker.broker.replication.isr_writer import IsrWrite, IsrWriter
from zkbroker.broker.replication.local_source import LeaderView, LocalSource
from zkbroker.broker.replication.purgatory import PartitionWait, Purgatory
from zkbroker.broker.replication.remote_source import RemoteSource
from zkbroker.broker.replication.replica_config import ReplicaConfig
from zkbroker.broker.replication.replica_state import PendingIsrChange
from zkbroker.broker.storage import LogManager, PartitionLog
from zkbroker.zk_layout import ZkStore
from zkbroker.zk_layout.release import Release

_log = get_logger(__name__)


def _now_ms() -> int:
    return int(time.time() * 1000)


class ReplicaManager:
    """The replicas of one broker; started and stopped with it."""

    def __init__(
        self,
        broker_id: int,
        logs: LogManager,
        image: MetadataImage,
        release: Release,
        config: Callable[[], ReplicaConfig],
        locals_: dict[int, LeaderView],
        peers: Callable[[], PeerClient],
        faults: ReplicationFaultView | None = None,
    ) -> None:
        self.broker_id = broker_id
        # Replication faults (`zkbroker.broker.hooks.replication_faults`): paused or slow
        # fetches, cut inter-broker traffic.
        self._faults = faults
        self._logs = logs
        self._image = image
        self._release = release
        self._config = config
        # Every broker of this process, by id: a leader here is fetched from directly.
        self._locals = locals_
        self._peers = peers
        self.hosted: dict[TP, HostedPartition] = {}
        self.produce_waits: Purgatory[TP] = Purgatory()
        self.delete_waits: Purgatory[TP] = Purgatory()
        self._fetchers: dict[int, ReplicaFetcher] = {}
        self._dirty: set[TP] = set()
        self._dirty_event = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._isr_tasks: set[asyncio.Task[None]] = set()
        self._writer: IsrWriter | None = None
        self._store: Callable[[], ZkStore] | None = None
        self._broker_epoch: Callable[[], int] = lambda: -1
        self._running = False
        self._log = _log.bind(broker_id=broker_id)

    # ---- LeaderView (what followers of this process read) ------------------------------------

    @property
    def running(self) -> bool:
        return self._running

    @property
    def logs(self) -> LogManager:
        return self._logs

    @property
    def image(self) -> MetadataImage:
        return self._image

    # ---- lifecycle --------------------------------------------------------------------------

    async def start(self, store: Callable[[], ZkStore], broker_epoch: Callable[[], int]) -> None:
        self._store = store
        self._broker_epoch = broker_epoch
        self._writer = IsrWriter(
            self.broker_id,
            self._release,
            self._image,
            store,
            broker_epoch,
            self._peers(),
            _now_ms(),
        )
        self._running = True
        self._logs.on_leader_append = self._leader_appended
        self._image.add_partition_listener(self._partition_changed)
        for name, topic in list(self._image.topics.items()):
            self._dirty.update((name, p) for p in topic.partitions)
        self._dirty_event.set()
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._reconcile_loop(), name=f"replicas-{self.broker_id}"),
            loop.create_task(self._isr_expiration(), name=f"isr-expiration-{self.broker_id}"),
        ]
        if self._writer.writes_znodes:
            self._tasks.append(
                loop.create_task(self._isr_propagation(), name=f"isr-changes-{self.broker_id}")
            )
        if self._logs.log_dir is not None:
            self._tasks.append(
                loop.create_task(self._checkpoints(), name=f"hw-checkpoint-{self.broker_id}")
            )

    async def stop(self) -> None:
        """Stop fetching and leading: waiting produce requests answer NOT_LEADER_OR_FOLLOWER,
        the high watermarks are checkpointed; the logs stay (a restarted broker has them)."""
        self._running = False
        self._logs.on_leader_append = None
        self._image.remove_partition_listener(self._partition_changed)
        tasks = [*self._tasks, *self._isr_tasks]
        for fetcher in self._fetchers.values():
            task = fetcher.take_task()
            if task is not None:
                tasks.append(task)
        self._tasks, self._isr_tasks = [], set()
        fetchers, self._fetchers = list(self._fetchers.values()), {}
        await cancel_and_wait(tasks, log=self._log)
        for fetcher in fetchers:
            await fetcher.source.close()
        for hosted in self.hosted.values():
            hosted.leading = None
            hosted.state = None
            self._poke(hosted.tp)
        self.hosted.clear()
        if self._logs.log_dir is not None:
            self._logs.checkpoint_high_watermarks()

    # ---- following the image ----------------------------------------------------------------

    def _partition_changed(self, topic: str, partition: int) -> None:
        self._dirty.add((topic, partition))
        self._dirty_event.set()

    async def _reconcile_loop(self) -> None:
        pacer = Pacer()
        while True:
            await self._dirty_event.wait()
            self._dirty_event.clear()
            dirty, self._dirty = self._dirty, set()
            for tp in sorted(dirty):
                if pacer.due():
                    await pacer.pause()
                try:
                    self.reconcile(tp)
                except Exception:
                    self._log.exception("replica.reconcile_failed", topic=tp[0], partition=tp[1])

    def reconcile(self, tp: TP) -> None:
        """Bring this broker's replica of `tp` to what the image says (LeaderAndIsr)."""
        leadership = self._leadership(tp)
        hosted = self.hosted.get(tp)
        if leadership is None or self.broker_id not in leadership.replicas:
            if hosted is not None:
                self._drop(hosted)
            return
        if hosted is None:
            hosted = self._host(tp)
            if hosted is None:
                return
        current = hosted.state
        now = _now_ms()
        if leadership.leader == self.broker_id:
            if (
                hosted.leading is None
                or current is None
                or current.leader_epoch != leadership.leader_epoch
            ):
                self._stop_fetching(tp)
                hosted.make_leader(leadership, now)
                self._log.debug(
                    "replica.became_leader",
                    topic=tp[0],
                    partition=tp[1],
                    leader_epoch=leadership.leader_epoch,
                    isr=list(leadership.isr),
                    log_end_offset=hosted.log.log_end_offset,
                    high_watermark=hosted.log.high_watermark,
                )
            elif leadership.partition_epoch > current.partition_epoch or leadership != current:
                hosted.update_state(leadership, now)
            self._poke(tp)
            return
        newly = (
            hosted.leading is not None
            or current is None
            or current.leader != leadership.leader
            or current.leader_epoch != leadership.leader_epoch
        )
        hosted.make_follower(leadership)
        self._poke(tp)
        if newly:
            self._follow(hosted, leadership)

    def _leadership(self, tp: TP) -> Leadership | None:
        topic = self._image.topics.get(tp[0])
        image = None if topic is None else topic.partitions.get(tp[1])
        found = self._image.partition_state(*tp)
        if image is None or found is None:
            return None
        state, version = found
        return Leadership(
            leader=image.leader,
            leader_epoch=image.leader_epoch,
            isr=tuple(image.isr),
            replicas=tuple(image.replicas),
            partition_epoch=version,
            controller_epoch=state.controller_epoch,
            removing=tuple(image.removing),
        )

    def _host(self, tp: TP) -> HostedPartition | None:
        topic = self._image.topics.get(tp[0])
        if topic is None or tp[0] in self._image.topics_being_deleted:
            return None
        log = self._logs.get_or_create(tp[0], tp[1], topic.topic_id)
        hosted = HostedPartition(tp[0], tp[1], self.broker_id, log, rules=self._rules())
        self.hosted[tp] = hosted
        return hosted

    def _rules(self) -> LeaderRules:
        return LeaderRules.of(self._release, self._config().lag_time_max_ms)

    def _drop(self, hosted: HostedPartition) -> None:
        self._stop_fetching(hosted.tp)
        hosted.leading = None
        hosted.state = None
        del self.hosted[hosted.tp]
        self._poke(hosted.tp)

    # ---- following --------------------------------------------------------------------------

    def _follow(self, hosted: HostedPartition, leadership: Leadership) -> None:
        """``makeFollower``: stop fetching from the old leader, truncate before 0.11, fetch
        from the new one (`truncation.follow_start`)."""
        tp = hosted.tp
        self._stop_fetching(tp)
        if leadership.leader < 0:
            return
        log = hosted.log
        start = truncation.follow_start(
            self._release, log.log_end_offset, log.high_watermark, log.latest_epoch
        )
        topic = self._image.topics.get(tp[0])
        fetcher = self._fetcher_for(leadership.leader)
        fetcher.add(
            tp,
            FetchState(
                topic_id=None if topic is None else topic.topic_id,
                fetch_offset=start.fetch_offset,
                current_leader_epoch=leadership.leader_epoch,
                truncating=start.truncating,
                last_fetched_epoch=start.last_fetched_epoch,
            ),
        )
        self._log.debug(
            "replica.became_follower",
            topic=tp[0],
            partition=tp[1],
            leader=leadership.leader,
            leader_epoch=leadership.leader_epoch,
            fetch_offset=start.fetch_offset,
            truncating=start.truncating,
        )

    def _stop_fetching(self, tp: TP) -> None:
        for fetcher in self._fetchers.values():
            fetcher.remove(tp)

    def _fetcher_for(self, leader: int) -> ReplicaFetcher:
        fetcher = self._fetchers.get(leader)
        if fetcher is None:
            fetcher = ReplicaFetcher(
                self.broker_id,
                self._source(leader),
                self._release,
                self._config,
                self._log_of,
                self._faults,
            )
            self._fetchers[leader] = fetcher
            fetcher.start()
        return fetcher

    def _source(self, leader: int) -> FetchSource:
        diverging = truncation.truncates_on_fetch(self._release)
        local = self._locals.get(leader)
        if local is not None:
            return LocalSource(self.broker_id, leader, local, diverging)
        return RemoteSource(
            self.broker_id,
            self._broker_epoch(),
            leader,
            self._image,
            self._peers(),
            self._release,
        )

    def _log_of(self, tp: TP) -> PartitionLog | None:
        hosted = self.hosted.get(tp)
        if hosted is None or hosted.leading is not None:
            return None
        return hosted.log

    def fetchers(self) -> dict[int, ReplicaFetcher]:
        """The fetchers by leader id (faults pause them)."""
        return self._fetchers

    # ---- leading: followers' reads ----------------------------------------------------------

    def read_for_follower(
        self, follower: int, parts: list[FetchPartition], max_bytes: int, diverging: bool
    ) -> tuple[dict[TP, FetchedPartition], int]:
        """A follower's fetch of `parts` (in-process or through the Fetch handler): each
        partition's answer and the bytes read, within `max_bytes` (the first partition's
        first batch whole, KIP-74)."""
        now = _now_ms()
        answers: dict[TP, FetchedPartition] = {}
        budget = max_bytes
        faults = self._faults
        for part in parts:
            tp = (part.topic, part.partition)
            hosted = self.hosted.get(tp)
            if hosted is None:
                answers[tp] = FetchedPartition(error_codes.NOT_LEADER_OR_FOLLOWER)
                continue
            if faults is not None and faults.fetch_paused(follower, *tp):
                # A fetch in flight when the pause began reads nothing more (and moves no
                # fetch state, nor the follower's log start): the pause holds from the moment
                # it is seen.
                answers[tp] = FetchedPartition(error_codes.NONE, hosted.log.high_watermark)
                continue
            limit = min(part.max_bytes, budget) if budget < max_bytes else part.max_bytes
            answer = hosted.read_for_follower(follower, part, max(limit, 0), now, diverging)
            answers[tp] = answer
            budget -= len(answer.records)
            if answer.error_code == error_codes.NONE:
                self.leader_progressed(hosted)
                # The follower's log start offset may have reached a deletion's.
                self.delete_waits.poke(tp)
                if hosted.expansion_candidate(follower):
                    self._expand(hosted, follower)
        return answers, max_bytes - budget

    def epoch_end(self, tp: TP, current_leader_epoch: int, epoch: int) -> EpochEnd:
        hosted = self.hosted.get(tp)
        if hosted is None or hosted.leading is None:
            return EpochEnd(error_codes.NOT_LEADER_OR_FOLLOWER, -1, -1)
        code = hosted.check_epoch(current_leader_epoch)
        if code != error_codes.NONE:
            return EpochEnd(code, -1, -1)
        found_epoch, end = hosted.log.end_offset_for_epoch(epoch)
        return EpochEnd(error_codes.NONE, found_epoch, end)

    def log_offsets(self, tp: TP, current_leader_epoch: int) -> tuple[int, int, int]:
        hosted = self.hosted.get(tp)
        if hosted is None or hosted.leading is None:
            return error_codes.NOT_LEADER_OR_FOLLOWER, -1, -1
        code = hosted.check_epoch(current_leader_epoch)
        if code != error_codes.NONE:
            return code, -1, -1
        return error_codes.NONE, hosted.log.log_start_offset, hosted.log.log_end_offset

    # ---- leading: the high watermark and acks=all -------------------------------------------

    def leader_progressed(self, hosted: HostedPartition) -> None:
        """After an append to a led log or a follower's fetch: raise the high watermark and
        complete the produce requests it satisfies."""
        if hosted.maybe_increment_high_watermark(_now_ms()):
            self._poke(hosted.tp)

    def _leader_appended(self, log: PartitionLog) -> None:
        """The leader appended to one of its logs (Produce, markers, coordinators)."""
        hosted = self.hosted.get((log.topic, log.partition))
        if hosted is not None and hosted.leading is not None:
            self.leader_progressed(hosted)

    def hosting(self, tp: TP) -> HostedPartition | None:
        """This broker's replica of `tp` as the image says now: a change the reconcile loop
        has not applied yet is applied first (a Produce may arrive in between)."""
        if self._running and (tp in self._dirty or tp not in self.hosted):
            self._dirty.discard(tp)
            self.reconcile(tp)
        return self.hosted.get(tp)

    async def wait_for_acks(self, required: dict[TP, int], timeout_ms: int) -> dict[TP, int]:
        """acks=all: each partition's code once its ISR has the records up to its required
        offset, or REQUEST_TIMED_OUT after `timeout_ms` (Kafka's DelayedProduce)."""

        def check_of(tp: TP) -> Callable[[int], int | None]:
            def check(required_offset: int) -> int | None:
                hosted = self.hosted.get(tp)
                if hosted is None:
                    return error_codes.NOT_LEADER_OR_FOLLOWER
                return hosted.enough_replicas_reached(required_offset)

            return check

        waits = {tp: PartitionWait(offset, check_of(tp)) for tp, offset in required.items()}
        return await self.produce_waits.wait_all(waits, max(timeout_ms, 0) / 1000)

    def low_watermark(self, tp: TP) -> int | None:
        """``Partition.lowWatermarkIfLeader``: the smallest log start offset of the leader and
        its live followers (-1 for a follower not heard from in this leadership); None when
        this broker does not lead `tp`."""
        hosted = self.hosted.get(tp)
        if hosted is None or hosted.leading is None:
            return None
        low = hosted.log.log_start_offset
        for follower, state in hosted.leading.followers.items():
            if self._image.is_alive(follower):
                low = min(low, state.log_start_offset)
        return low

    async def wait_for_deletions(
        self, required: dict[TP, int], timeout_ms: int
    ) -> dict[TP, tuple[int, int | None]]:
        """DeleteRecords: each partition's code and low watermark once every live replica's
        log start offset reached its required offset (NOT_LEADER_OR_FOLLOWER and -1 when the
        leadership went), or REQUEST_TIMED_OUT and None after `timeout_ms` (Kafka's
        DelayedDeleteRecords; the response then keeps the low watermark it had)."""
        reached: dict[TP, int] = {}

        def check_of(tp: TP) -> Callable[[int], int | None]:
            def check(required_offset: int) -> int | None:
                low = self.low_watermark(tp)
                if low is None:
                    reached[tp] = -1
                    return error_codes.NOT_LEADER_OR_FOLLOWER
                if low < required_offset:
                    return None
                reached[tp] = low
                return error_codes.NONE

            return check

        waits = {tp: PartitionWait(offset, check_of(tp)) for tp, offset in required.items()}
        codes = await self.delete_waits.wait_all(waits, max(timeout_ms, 0) / 1000)
        return {tp: (code, reached.get(tp)) for tp, code in codes.items()}

    def _poke(self, tp: TP) -> None:
        """`tp`'s high watermark, followers or leadership changed: complete what waits on it."""
        self.produce_waits.poke(tp)
        self.delete_waits.poke(tp)

    # ---- leading: the ISR -------------------------------------------------------------------

    def _expand(self, hosted: HostedPartition, follower: int) -> None:
        leading, state = hosted.leading, hosted.state
        if leading is None or state is None:
            return
        proposal = leading.propose_expand(follower)
        isr = (*state.isr, follower) if follower not in state.isr else state.isr
        self._write_isr(hosted, proposal, isr)

    def _shrink(self, hosted: HostedPartition, out: list[int]) -> None:
        leading, state = hosted.leading, hosted.state
        if leading is None or state is None:
            return
        proposal = leading.propose_shrink(out)
        isr = tuple(b for b in state.isr if b not in out)
        self._log.info(
            "replica.isr_shrinking",
            topic=hosted.topic,
            partition=hosted.partition,
            isr=list(state.isr),
            out_of_sync=out,
            high_watermark=hosted.log.high_watermark,
            log_end_offset=hosted.log.log_end_offset,
        )
        self._write_isr(hosted, proposal, isr)

    def _write_isr(
        self, hosted: HostedPartition, proposal: PendingIsrChange, isr: tuple[int, ...]
    ) -> None:
        state = hosted.state
        assert state is not None
        topic = self._image.topics.get(hosted.topic)
        change = IsrWrite(
            topic=hosted.topic,
            partition=hosted.partition,
            topic_id=None if topic is None else topic.topic_id,
            leader=self.broker_id,
            leader_epoch=state.leader_epoch,
            isr=isr,
            partition_epoch=state.partition_epoch,
            controller_epoch=state.controller_epoch,
        )
        task = asyncio.get_running_loop().create_task(
            self._apply_isr_write(hosted, proposal, change)
        )
        self._isr_tasks.add(task)
        task.add_done_callback(self._isr_tasks.discard)

    async def _apply_isr_write(
        self, hosted: HostedPartition, proposal: PendingIsrChange, change: IsrWrite
    ) -> None:
        writer = self._writer
        written = None
        # A cut between brokers fails AlterPartition; a pre-2.7 leader writes ZooKeeper.
        cut = (
            self._faults is not None
            and self._faults.inter_broker_cut(self.broker_id)
            and writer is not None
            and not writer.writes_znodes
        )
        try:
            if writer is not None and not cut:
                written = await writer.write(change, _now_ms())
        except Exception:
            self._log.exception("replica.isr_write_failed", topic=change.topic)
        leading = hosted.leading
        if leading is None or hosted.state is None or hosted.leader_epoch != change.leader_epoch:
            return
        if written is None:
            leading.abort(proposal=proposal)
            return
        if leading.commit(written.isr, proposal=proposal):
            hosted.state = replace(
                hosted.state, isr=written.isr, partition_epoch=written.partition_epoch
            )
            self._log.info(
                "replica.isr_updated",
                topic=change.topic,
                partition=change.partition,
                isr=list(written.isr),
                partition_epoch=written.partition_epoch,
            )
        self.leader_progressed(hosted)
        self._poke(hosted.tp)

    async def _isr_expiration(self) -> None:
        """``maybeShrinkIsr`` every replica.lag.time.max.ms / 2."""
        pacer = Pacer()
        while True:
            config = self._config()
            await asyncio.sleep(max(config.lag_time_max_ms / 2, 10) / 1000)
            now = _now_ms()
            for hosted in list(self.hosted.values()):
                if pacer.due():
                    await pacer.pause()
                hosted.rules = replace(hosted.rules, lag_time_max_ms=config.lag_time_max_ms)
                out = hosted.out_of_sync(now, config.lag_time_max_ms)
                if out:
                    self._shrink(hosted, out)

    async def _isr_propagation(self) -> None:
        while True:
            await asyncio.sleep(ISR_CHANGE_PROPAGATION_CHECK_INTERVAL_MS / 1000)
            if self._writer is None:
                continue
            try:
                await self._writer.propagate(_now_ms())
            except Exception:
                self._log.exception("replica.isr_propagation_failed")

    async def _checkpoints(self) -> None:
        while True:
            await asyncio.sleep(self._config().high_watermark_checkpoint_interval_ms / 1000)
            try:
                self._logs.checkpoint_high_watermarks()
            except OSError:
                self._log.exception("replica.high_watermark_checkpoint_failed")
