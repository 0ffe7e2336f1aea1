"""One broker's transaction coordinator: the asyncio shell around the transaction decisions.

Kafka 3.9's ``TransactionCoordinator`` with ``TransactionStateManager``'s partition handling
(docs/kafka-behaviour.md §17, KIP-98). `TransactionCoordinator` is a
``zkbroker.broker.coordinator_runtime.CoordinatorRuntime`` (owning, loading, unloading,
appending, the follow loop) and its shard: what a replayed partition holds and what a load or
unload starts or stops. It runs the transitions: each is appended before it takes effect, EndTxn
answers once Prepare is written and the markers (`zkbroker.broker.transactions.marker_writer`)
complete it, the follow loop aborts timed-out transactions and expires idle ids. Decisions run
without an ``await`` between check and append, so one id's requests never interleave.

Not here: the decisions and error codes (``zkbroker.broker.rules.transactions.decisions``),
asking a coordinator in another process (``zkbroker.broker.transactions.verify_sender``), the
wire (``handlers``), creating ``__transaction_state`` (``zkbroker.handlers.find_coordinator``),
TV2 (KIP-890 part 2).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from zkbroker.broker.asyncutil import cancel_and_wait, now_ms
from zkbroker.broker.coordinator_runtime import (
    AppendMark,
    CoordinatorRuntime,
    OwnedPartition,
    PartitionState,
)
from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.log import get_logger
from zkbroker.broker.peers import client as peer_client
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.records import RecordBatchV2
from zkbroker.broker.rules.transactions import decisions as decide
from zkbroker.broker.rules.transactions.state import (
    IllegalTransition,
    TopicPartition,
    TxnMetadata,
    TxnState,
    TxnTransit,
    is_epoch_exhausted,
)
from zkbroker.broker.security.inter_broker import InterBrokerSecurity
from zkbroker.broker.storage import LogManager
from zkbroker.broker.transactions import loading
from zkbroker.broker.transactions import transaction_log_codec as rec
from zkbroker.broker.transactions.config import TxnConfig
from zkbroker.broker.transactions.local_brokers import LocalBrokers
from zkbroker.broker.transactions.marker_writer import MarkerWriter
from zkbroker.broker.transactions.verify_sender import VerifySender
from zkbroker.zk_layout.release import Release

if TYPE_CHECKING:
    from zkbroker.broker.replication.replica_manager import ReplicaManager

TRANSACTION_TOPIC = "__transaction_state"

_log = get_logger(__name__)

#: A partition this broker coordinates: `epoch` is the coordinator epoch, `data` its ids.
_Partition = OwnedPartition[dict[str, TxnMetadata]]
_Entries = list[tuple[bytes | None, bytes | None]]


@dataclass(frozen=True, slots=True)
class InitAnswer:
    error: int
    producer_id: int = -1
    producer_epoch: int = -1


def unknown_partitions(
    image: MetadataImage, partitions: list[TopicPartition]
) -> dict[TopicPartition, int] | None:
    """KafkaApis' check before the coordinator sees AddPartitionsToTxn: if any partition is not
    in the metadata, it gets UNKNOWN_TOPIC_OR_PARTITION and every other one
    OPERATION_NOT_ATTEMPTED; None when all are known."""
    unknown = set()
    for topic, partition in partitions:
        image_topic = image.topics.get(topic)
        if image_topic is None or partition not in image_topic.partitions:
            unknown.add((topic, partition))
    if not unknown:
        return None
    return {
        tp: ec.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else ec.OPERATION_NOT_ATTEMPTED
        for tp in partitions
    }


class TransactionCoordinator(CoordinatorRuntime[dict[str, TxnMetadata], _Entries]):
    """The ``__transaction_state`` partitions this broker leads and the transactional ids in
    them. As the runtime's shard, a partition's data records are collected while loading, then
    replayed into its ids (``zkbroker.broker.transactions.loading``); ids found in
    PrepareCommit/PrepareAbort get their markers written once loaded. `status` gives
    getTransactionState's errors: COORDINATOR_NOT_AVAILABLE when inactive or without a log,
    NOT_COORDINATOR when another broker leads the id's partition, COORDINATOR_LOAD_IN_PROGRESS
    while loading it, else NONE."""

    def __init__(
        self,
        broker_id: int,
        image: MetadataImage,
        logs: LogManager,
        release: Release,
        config: Callable[[], TxnConfig],
        producer_ids: Callable[[], Awaitable[int]],
        inter_broker: InterBrokerSecurity,
        local: LocalBrokers,
        replicas: ReplicaManager | None = None,
    ) -> None:
        super().__init__(
            topic=TRANSACTION_TOPIC,
            event_prefix="txn",
            broker_id=broker_id,
            image=image,
            logs=logs,
            partition_of=decide.partition_for,
            log=_log.bind(broker_id=broker_id),
            replicas=replicas,
        )
        self._release = release
        self._config = config
        self._producer_ids = producer_ids
        #: partition -> the tasks writing markers then completing its ids' transactions.
        self._completions: dict[int, set[asyncio.Task[None]]] = {}
        self._last_abort = 0
        self._last_expiry = 0
        self._local = local
        # Two channels to other processes' brokers, as Kafka's marker channel and its
        # AddPartitionsToTxnManager each have their own NetworkClient.
        self.markers = MarkerWriter(
            broker_id,
            image,
            logs,
            release,
            peer_client.PeerClient(inter_broker, client_id=f"broker-{broker_id}-txn-marker-sender"),
            local,
        )
        self._verify_sender = VerifySender(broker_id, image, inter_broker, self._log)

    # ---- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        self._last_abort = self._last_expiry = now_ms()
        self.start_following()

    async def stop(self) -> None:
        tasks = self.take_tasks()
        tasks += [t for ts in self._completions.values() for t in ts]
        self._completions = {}
        await cancel_and_wait(tasks, what="transaction_coordinator", log=self._log)
        self.clear()
        # After the tasks: none of them can open a connection again.
        await self.markers.close()
        await self._verify_sender.close()

    # ---- the runtime's shard -------------------------------------------------------------

    def new_data(self) -> dict[str, TxnMetadata]:
        return {}

    def begin_load(self) -> _Entries:
        return []

    def replay(self, batch: RecordBatchV2, offset: int, entries: _Entries, now: int) -> None:
        if not batch.is_control:
            entries.extend((r.key, r.value) for r in batch.records() if r.offset >= offset)

    def replayed(self, owned: _Partition, entries: _Entries) -> None:
        owned.data = loading.replay(entries)

    def loaded(self, owned: _Partition, entries: _Entries, start: float) -> None:
        owing = loading.owing_markers(owned.data)
        self._log.info(
            "txn.partition_loaded",
            partition=owned.partition,
            ids=len(owned.data),
            owing_markers=len(owing),
            coordinator_epoch=owned.epoch,
            ms=round((time.monotonic() - start) * 1000, 1),
        )
        for meta in owing:
            commit = meta.state is TxnState.PREPARE_COMMIT
            transit = decide.end_txn_appended(
                meta,
                meta.producer_id,
                meta.producer_epoch,
                commit,
                owned.epoch,
                owned.epoch,
                now_ms(),
            )
            if isinstance(transit, TxnTransit):
                self._complete_later(owned.partition, owned, meta, transit, commit)

    def unloaded(self, partition: int, owned: _Partition | None) -> None:
        """Leadership moved: forget the ids and stop writing their markers (Kafka's
        removeTransactionsForTxnTopicPartition and removeMarkersForTxnTopicPartition)."""
        for completion in self._completions.pop(partition, set()):
            completion.cancel()
        self._log.info(
            "txn.partition_unloaded",
            partition=partition,
            ids=0 if owned is None else len(owned.data),
        )

    def periodic(self) -> None:
        """Abort timed-out transactions and expire idle ids, each at its interval."""
        cfg = self._config()
        now = now_ms()
        if now - self._last_abort >= cfg.abort_interval_ms:
            self._last_abort = now
            self._abort_timed_out()
        if now - self._last_expiry >= cfg.remove_expired_interval_ms:
            self._last_expiry = now
            self._expire_ids(cfg)

    # ---- where an id lives ---------------------------------------------------------------

    def _metadata(self, transactional_id: str) -> TxnMetadata | None:
        partition = self.partition_for(transactional_id)
        held = None if partition is None else self.partitions.get(partition)
        return None if held is None else held.data.get(transactional_id)

    # ---- writing -------------------------------------------------------------------------

    def _append(self, transactional_id: str, transit: TxnTransit | None) -> int:
        """Append the id's record (a tombstone for None) if this broker still coordinates it
        at the epoch it loaded (``appendTransactionToLog``; a lost leadership is
        NOT_COORDINATOR, as Kafka maps NOT_LEADER_OR_FOLLOWER)."""
        partition = self.partition_for(transactional_id)
        held = None if partition is None else self.partitions.get(partition)
        if partition is None or held is None:
            return ec.NOT_COORDINATOR
        leader, epoch = self.leader_of(partition)
        if leader != self.broker_id or epoch != held.epoch:
            return ec.NOT_COORDINATOR
        key = rec.encode_key(transactional_id)
        value = None
        if transit is not None:
            value = rec.encode_value(rec.value_of(transit), rec.value_version(self._release))
        try:
            self.append(partition, epoch, [(key, value)])
        except Exception:
            # A storage failure: Kafka maps KAFKA_STORAGE_ERROR of this append to NOT_COORDINATOR.
            self._log.exception("txn.append_failed", partition=partition)
            return ec.NOT_COORDINATOR
        return ec.NONE

    def _write(self, meta: TxnMetadata, transit: TxnTransit, epoch_fence: bool = False) -> int:
        """Append a prepared transit and complete it, or abandon it when the append fails."""
        error = self._append(meta.transactional_id, transit)
        if error == ec.NONE:
            meta.complete_transition(transit)
        else:
            meta.abandon_transition(epoch_fence)
        return error

    # ---- requests ------------------------------------------------------------------------

    async def init_producer_id(
        self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None
    ) -> InitAnswer:
        """handleInitProducerId for a transactional id (the idempotent case is the handler's)."""
        if not transactional_id:
            return InitAnswer(ec.INVALID_REQUEST)
        # Kafka validates the timeout before looking the id up.
        if not decide.valid_timeout(timeout_ms, self._config().max_timeout_ms):
            return InitAnswer(ec.INVALID_TRANSACTION_TIMEOUT)
        status = self.status(transactional_id)
        if status != ec.NONE:
            return InitAnswer(status)
        meta = self._metadata(transactional_id)
        spare: list[int] = []
        if meta is None or is_epoch_exhausted(meta.producer_epoch):
            # Producer ids come from ZooKeeper-claimed blocks (an await): fetched before the
            # decision so that the check and the append run without one in between.
            spare.append(await self._producer_ids())
            status = self.status(transactional_id)
            if status != ec.NONE:
                return InitAnswer(status)
            meta = self._metadata(transactional_id)
        mark = self.mark(transactional_id)
        answer = self._init_decided(transactional_id, meta, timeout_ms, expected, spare)
        error = await self._answer_replicated(mark, answer.error)
        return answer if error == answer.error else InitAnswer(error)

    async def _answer_replicated(self, mark: AppendMark | None, code: int) -> int:
        """A request's answer once the ISR has what it appended to the transaction log (Kafka
        appends there with acks=-1 under request.timeout.ms): `code`, or the append's failure
        as the request answers it."""
        if code != ec.NONE:
            return code
        replicated = await self.replicated(mark, self._config().request_timeout_ms)
        return code if replicated == ec.NONE else decide.append_error(replicated)

    def _init_decided(
        self,
        transactional_id: str,
        meta: TxnMetadata | None,
        timeout_ms: int,
        expected: tuple[int, int] | None,
        spare: list[int],
    ) -> InitAnswer:
        """The decision on InitProducerId and its append, with the producer id fetched for it
        (`spare`) if the id needs a new one."""

        def next_id() -> int:
            if not spare:
                raise IllegalTransition("no producer id was fetched for this decision")
            return spare.pop()

        result = decide.init_producer_id(
            meta,
            transactional_id,
            timeout_ms,
            self._config().max_timeout_ms,
            expected,
            next_id,
            now_ms(),
        )
        if result.metadata is not None:
            partition = self.partition_for(transactional_id)
            assert partition is not None
            self.partitions[partition].data[transactional_id] = result.metadata
            meta = result.metadata
        if result.error != ec.NONE or result.transit is None or meta is None:
            return InitAnswer(result.error)
        if result.fence:
            # Fence the running producer: abort its transaction with the bumped epoch and let
            # the new producer retry (Kafka answers CONCURRENT_TRANSACTIONS once aborting).
            error = self._end(
                meta,
                result.transit.producer_id,
                result.transit.producer_epoch,
                commit=False,
                from_client=False,
            )
            return InitAnswer(ec.CONCURRENT_TRANSACTIONS if error == ec.NONE else error)
        error = self._write(meta, result.transit)
        if error != ec.NONE:
            return InitAnswer(error)
        self._log.info(
            "txn.producer_initialized",
            transactional_id=transactional_id,
            producer_id=result.producer_id,
            producer_epoch=result.producer_epoch,
        )
        return InitAnswer(ec.NONE, result.producer_id, result.producer_epoch)

    async def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> int:
        """handleAddPartitionsToTransaction (AddOffsetsToTxn passes the offsets partition)."""
        if not transactional_id:
            return ec.INVALID_REQUEST
        status = self.status(transactional_id)
        if status != ec.NONE:
            return status
        meta = self._metadata(transactional_id)
        got = decide.add_partitions(
            meta, transactional_id, producer_id, producer_epoch, partitions, now_ms()
        )
        if isinstance(got, int) or meta is None:
            return got if isinstance(got, int) else ec.UNKNOWN_SERVER_ERROR
        mark = self.mark(transactional_id)
        return await self._answer_replicated(mark, self._write(meta, got))

    def verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartition],
    ) -> dict[TopicPartition, int]:
        """handleVerifyPartitionsInTransaction (AddPartitionsToTxn v4+ verify_only)."""
        if not transactional_id:
            return dict.fromkeys(partitions, ec.INVALID_REQUEST)
        status = self.status(transactional_id)
        if status != ec.NONE:
            return dict.fromkeys(partitions, status)
        return decide.verify_partitions(
            self._metadata(transactional_id),
            transactional_id,
            producer_id,
            producer_epoch,
            partitions,
            self._release,
        )

    def verify_request(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartition],
    ) -> dict[TopicPartition, int]:
        """A verification as this broker's KafkaApis answers AddPartitionsToTxn v4
        ``verify_only``: partitions missing from its metadata first (`unknown_partitions`),
        then `verify`."""
        unknown = unknown_partitions(self._image, partitions)
        if unknown is not None:
            return unknown
        return self.verify(transactional_id, producer_id, producer_epoch, partitions)

    async def verify_for_produce(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartition],
    ) -> dict[TopicPartition, int]:
        """KIP-890 part 1 (3.6+): a partition leader asks the id's coordinator whether each
        partition is in the producer's ongoing transaction. This broker's coordinator answers
        directly, another broker of this process through its coordinator, a broker elsewhere
        through AddPartitionsToTxn v4 ``verify_only`` on its inter-broker listener
        (`zkbroker.broker.transactions.verify_sender`, which says what its failures answer).
        Codes are the coordinator's as it answers them; mapping them for the producer (Kafka's
        ``AddPartitionsToTxnManager``) is the caller's. An unknown coordinator answers
        COORDINATOR_NOT_AVAILABLE."""
        partition = self.partition_for(transactional_id)
        if partition is None:
            return dict.fromkeys(partitions, ec.COORDINATOR_NOT_AVAILABLE)
        leader, _ = self.leader_of(partition)
        coordinator: TransactionCoordinator | None = self
        if leader != self.broker_id:
            peer = self._local.running(leader)
            coordinator = None if peer is None else peer.transaction_coordinator
        if coordinator is not None:
            return coordinator.verify_request(
                transactional_id, producer_id, producer_epoch, partitions
            )
        return await self._verify_sender.verify(
            leader, transactional_id, producer_id, producer_epoch, partitions
        )

    async def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> int:
        """endTransaction from a client's EndTxn: answered once the ISR has the
        PrepareCommit/PrepareAbort (the markers follow it, `_complete`)."""
        mark = self.mark(transactional_id) if transactional_id else None
        error = self._end_txn(transactional_id, producer_id, producer_epoch, commit)
        return await self._answer_replicated(mark, error)

    def _end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> int:
        if not transactional_id:
            return ec.INVALID_REQUEST
        status = self.status(transactional_id)
        if status != ec.NONE:
            return status
        meta = self._metadata(transactional_id)
        if meta is None:
            return ec.INVALID_PRODUCER_ID_MAPPING
        return self._end(meta, producer_id, producer_epoch, commit, from_client=True)

    def _end(
        self,
        meta: TxnMetadata,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        from_client: bool,
    ) -> int:
        result = decide.end_txn(
            meta,
            meta.transactional_id,
            producer_id,
            producer_epoch,
            commit,
            now_ms(),
            from_client=from_client,
            release=self._release,
        )
        if result.transit is None:
            return result.error
        partition = self.partition_for(meta.transactional_id)
        held = None if partition is None else self.partitions.get(partition)
        if partition is None or held is None:
            meta.abandon_transition(result.epoch_fence)
            return ec.NOT_COORDINATOR
        epoch_at_append = held.epoch
        error = self._write(meta, result.transit, result.epoch_fence)
        if error != ec.NONE:
            return error
        self._log.info(
            "txn.prepared",
            transactional_id=meta.transactional_id,
            state=meta.state.label,
            partitions=len(meta.partitions),
            from_client=from_client,
        )
        # Checked against the request's id and epoch, not the transit's: before 2.6 a newer
        # epoch passes the first check, PrepareCommit/PrepareAbort is written with the stored
        # one, and this check refuses it (no markers follow until the log is loaded again).
        complete = decide.end_txn_appended(
            meta,
            producer_id,
            producer_epoch,
            commit,
            epoch_at_append,
            held.epoch,
            now_ms(),
        )
        if isinstance(complete, int):
            return complete
        self._complete_later(partition, held, meta, complete, commit)
        return ec.NONE

    def _complete_later(
        self,
        partition: int,
        held: _Partition,
        meta: TxnMetadata,
        transit: TxnTransit,
        commit: bool,
    ) -> None:
        # The markers wait for the Prepare record just appended to reach the ISR.
        prepared = self.open(partition).log_end_offset
        task = asyncio.get_running_loop().create_task(
            self._complete(held, meta, transit, commit, prepared),
            name=f"txn-complete-{self.broker_id}-{meta.transactional_id}",
        )
        tasks = self._completions.setdefault(partition, set())
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def _complete(
        self,
        held: _Partition,
        meta: TxnMetadata,
        transit: TxnTransit,
        commit: bool,
        prepared: int,
    ) -> None:
        """Once the ISR has the Prepare record (below offset `prepared`), write every marker,
        then CompleteCommit/CompleteAbort (Kafka's TransactionMarkerChannelManager then
        tryAppendToLog)."""
        try:
            if not await self._prepare_replicated(held, meta, prepared):
                meta.abandon_transition()  # the next coordinator completes it from the log
                return
            await self.markers.write(
                sorted(meta.partitions),
                producer_id=transit.producer_id,
                producer_epoch=transit.producer_epoch,
                coordinator_epoch=held.epoch,
                commit=commit,
                still_owner=lambda: self._owns(meta.transactional_id, held),
            )
        except asyncio.CancelledError:
            meta.abandon_transition()
            raise
        if not self._owns(meta.transactional_id, held):
            meta.abandon_transition()  # the next coordinator completes it from the log
            return
        error = self._write(meta, transit)
        self._log.info(
            "txn.completed",
            transactional_id=meta.transactional_id,
            state=meta.state.label,
            error=ec.name_of(error),
        )

    async def _prepare_replicated(self, held: _Partition, meta: TxnMetadata, prepared: int) -> bool:
        """Kafka sends markers from the Prepare append's callback: wait for the ISR while this
        broker still coordinates the id (a stuck ISR is waited out, as a client's retried
        EndTxn would be); False once it no longer does."""
        timeout_ms = self._config().request_timeout_ms
        while self._owns(meta.transactional_id, held):
            code = await self.replicated_to(held.partition, prepared, timeout_ms)
            if code in (ec.NONE, ec.NOT_ENOUGH_REPLICAS_AFTER_APPEND):
                return True  # past the high watermark either way
            if code != ec.REQUEST_TIMED_OUT:
                return False
            self._log.warning(
                "txn.prepare_not_replicated",
                transactional_id=meta.transactional_id,
                waited_ms=timeout_ms,
            )
        return False

    def _owns(self, transactional_id: str, held: _Partition) -> bool:
        partition = self.partition_for(transactional_id)
        return (
            self.active
            and partition is not None
            and self.partitions.get(partition) is held
            and self.leader_of(partition) == (self.broker_id, held.epoch)
        )

    # ---- admin ---------------------------------------------------------------------------

    def describe(self, transactional_id: str) -> tuple[int, TxnMetadata | None]:
        """handleDescribeTransactions for one id (an id being expired, Dead, is not found)."""
        if self.active and not transactional_id:
            return ec.INVALID_REQUEST, None
        status = self.status(transactional_id)
        if status != ec.NONE:
            return status, None
        meta = self._metadata(transactional_id)
        if meta is None or meta.state is TxnState.DEAD:
            return ec.TRANSACTIONAL_ID_NOT_FOUND, None
        return ec.NONE, meta

    def list_states(
        self, states: set[TxnState], producer_ids: set[int], duration_ms: int
    ) -> tuple[int, list[TxnMetadata]]:
        """listTransactionStates over the partitions this broker leads; Dead ids (being
        removed) are never listed."""
        if not self.active:
            return ec.COORDINATOR_NOT_AVAILABLE, []
        held = self.owned()
        if any(h.state is PartitionState.LOADING for h in held):
            return ec.COORDINATOR_LOAD_IN_PROGRESS, []
        now = now_ms()
        found = []
        for h in held:
            for meta in h.data.values():
                if meta.state is TxnState.DEAD:
                    continue
                if producer_ids and meta.producer_id not in producer_ids:
                    continue
                if states and meta.state not in states:
                    continue
                if duration_ms >= 0 and now - meta.start_timestamp <= duration_ms:
                    continue
                found.append(meta)
        return ec.NONE, found

    # ---- timers --------------------------------------------------------------------------

    def _abort_timed_out(self) -> None:
        """abortTimedOutTransactions: fence and abort every transaction past its timeout."""
        now = now_ms()
        for held in list(self.partitions.values()):
            if held.state is not PartitionState.LOADED:
                continue
            for meta in decide.timed_out(list(held.data.values()), now):
                result = decide.abort_timed_out(meta, meta.producer_id, now, self._release)
                if result.transit is None:
                    continue
                # PrepareAbort with the fenced (bumped) epoch is pending: write it, then markers.
                self._log.info(
                    "txn.timed_out",
                    transactional_id=meta.transactional_id,
                    producer_id=meta.producer_id,
                    producer_epoch=result.transit.producer_epoch,
                )
                self._after_prepare(held, meta, result.transit, result.epoch_fence)

    def _after_prepare(
        self, held: _Partition, meta: TxnMetadata, transit: TxnTransit, epoch_fence: bool
    ) -> None:
        partition = self.partition_for(meta.transactional_id)
        error = self._write(meta, transit, epoch_fence)
        if error != ec.NONE or partition is None:
            return
        complete = decide.end_txn_appended(
            meta,
            transit.producer_id,
            transit.producer_epoch,
            False,
            held.epoch,
            held.epoch,
            now_ms(),
        )
        if isinstance(complete, TxnTransit):
            self._complete_later(partition, held, meta, complete, commit=False)

    def _expire_ids(self, cfg: TxnConfig) -> None:
        """removeExpiredTransactionalIds: a tombstone for ids idle past
        transactional.id.expiration.ms, then forget them."""
        now = now_ms()
        for held in list(self.partitions.values()):
            if held.state is not PartitionState.LOADED:
                continue
            for meta in decide.expired(list(held.data.values()), now, cfg.id_expiration_ms):
                meta.prepare_dead()
                if self._append(meta.transactional_id, None) == ec.NONE:
                    held.data.pop(meta.transactional_id, None)
                    self._log.info("txn.id_expired", transactional_id=meta.transactional_id)
                else:
                    meta.abandon_transition()
