"""Produce: records appended to the partition's log (Kafka's behaviour: §15; idempotence and
transactions §17, including KIP-890 verification from 3.6; ACLs §21).

acks=-1 waits until the ISR has the records (`zkbroker.broker.replication`, §24). Not here:
quotas and their throttle time, the verification guard against an append racing the
transaction's abort, and (without an authorizer) Kafka's refusal of transactional records
sent without a transactional id.
"""

from __future__ import annotations

import time

from zkbroker.broker.asyncutil import Pacer
from zkbroker.broker.image.metadata_image import INTERNAL_TOPICS
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.produce import (
    BatchIndexAndErrorMessage,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceResponse,
)
from zkbroker.broker.rules.log_validation import (
    AppendError,
    ProducerBatchInfo,
    ValidatedAppend,
    produce_request_errors,
    validate_append,
)
from zkbroker.broker.rules.producer_state import BatchMetadata, ProducerBatch, last_sequence
from zkbroker.broker.rules.transactions.state import TopicPartition
from zkbroker.broker.rules.transactions.verification import (
    PRODUCE_VERIFICATION_RELEASE,
    produce_error,
)
from zkbroker.broker.storage import PartitionLog
from zkbroker.handlers.context import NoResponse, RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.partitions import Located, leader_hint, locate, open_log
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.PRODUCE
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "acks 0/1/-1; batches validated as Kafka's LogValidator does (CRC, sizes, timestamps, "
    "KIP-467 record errors, LogAppendTime, recompression); idempotent producers (duplicates "
    "answered with their offsets, sequence and epoch errors); `min.insync.replicas`; "
    "KIP-951 leader hints (v10+)"
)

# Kafka's AdminUtils.AdminClientId: the one client id allowed to write internal topics.
ADMIN_CLIENT_ID = "__admin_client"
LEADER_HINT_VERSION = 10  # KIP-951
# Record batch v2 header: magic at byte 16, attributes (int16) at 21 (flags in its low byte, 22),
# producer id at 43.
_MAGIC_AT, _ATTRIBUTES_LOW_AT, _PRODUCER_AT, _HEADER_SIZE = 16, 22, 43, 61
_TRANSACTIONAL_FLAG = 0x10


def _transactional_producer(records: bytes) -> tuple[int, int] | None:
    """(producer id, epoch) of a transactional v2 first batch; None otherwise (one byte test
    for the rest: Produce v3+ carries one batch, validated later)."""
    if (
        len(records) < _HEADER_SIZE
        or records[_MAGIC_AT] != 2
        or not records[_ATTRIBUTES_LOW_AT] & _TRANSACTIONAL_FLAG
    ):
        return None
    pid = int.from_bytes(records[_PRODUCER_AT : _PRODUCER_AT + 8], "big", signed=True)
    epoch = int.from_bytes(records[_PRODUCER_AT + 8 : _PRODUCER_AT + 10], "big", signed=True)
    return pid, epoch


async def _verify(
    ctx: RequestContext,
    log: PartitionLog,
    transactional_id: str | None,
    records: bytes,
    partition: TopicPartition,
) -> int:
    """KIP-890 part 1: a partition's first transactional write of a transaction is checked
    with the coordinator (ReplicaManager.maybeStartTransactionVerificationForPartition)."""
    if transactional_id is None or ctx.release < PRODUCE_VERIFICATION_RELEASE:
        return error_codes.NONE
    producer = _transactional_producer(records)
    if producer is None:
        return error_codes.NONE
    pid, epoch = producer
    log.refresh_if_changed()
    if pid in log.transactions.ongoing:
        # 3.6-3.9's UnifiedLog.hasOngoingTransaction(producerId) looks at the producer id
        # only (4.0 adds the epoch); the append checks the epoch.
        return error_codes.NONE
    answers = await ctx.broker.transaction_coordinator.verify_for_produce(
        transactional_id, pid, epoch, [partition]
    )
    code = answers.get(partition, error_codes.UNKNOWN_SERVER_ERROR)
    return code if code == error_codes.NONE else produce_error(code, ctx.release, ctx.version)


def _producer_batch(info: ProducerBatchInfo, max_timestamp: int) -> ProducerBatch:
    return ProducerBatch(
        producer_id=info.producer_id,
        epoch=info.producer_epoch,
        first_seq=info.base_sequence,
        last_seq=last_sequence(info.base_sequence, info.last_offset - info.first_offset),
        first_offset=info.first_offset,
        last_offset=info.last_offset,
        max_timestamp=max_timestamp,
    )


def _failed(index: int, code: int) -> PartitionProduceResponse:
    return PartitionProduceResponse(
        index=index, error_code=code, base_offset=-1, log_append_time_ms=-1, log_start_offset=-1
    )


def _refused(index: int, error: AppendError) -> PartitionProduceResponse:
    answer = _failed(index, error.code)
    answer.record_errors = [
        BatchIndexAndErrorMessage(batch_index=e.batch_index, batch_index_error_message=e.message)
        for e in error.record_errors
    ]
    answer.error_message = error.wire_message
    return answer


def _in_sync_replicas(ctx: RequestContext, located: Located, min_insync_replicas: int) -> int:
    """The ISR's size as this leader knows it (Partition.appendRecordsToLeader), telling the
    replica manager the topic's min.insync.replicas for the acks=all waits."""
    hosted = ctx.broker.replica_manager.hosting((located.topic.name, located.partition.partition))
    if hosted is None:
        return len(located.partition.isr)
    hosted.min_insync_replicas = min_insync_replicas
    return len(hosted.isr)


async def _append(
    ctx: RequestContext,
    located: Located,
    index: int,
    records: bytes,
    acks: int,
    transactional_id: str | None,
    waits: dict[tuple[str, int], int],
) -> PartitionProduceResponse:
    log, config = await open_log(ctx, located)
    state = located.partition
    tp = (located.topic.name, state.partition)
    if acks == -1 and _in_sync_replicas(ctx, located, config.min_insync_replicas) < (
        config.min_insync_replicas
    ):
        return _failed(index, error_codes.NOT_ENOUGH_REPLICAS)
    name = f"{located.topic.name}-{state.partition}"
    verified = await _verify(ctx, log, transactional_id, records, tp)
    if verified != error_codes.NONE:
        return _failed(index, verified)
    with log.append_lock():
        result = validate_append(
            records,
            topic_partition=name,
            next_offset=log.log_end_offset,
            now_ms=int(time.time() * 1000),
            config=config.validation,
            partition_leader_epoch=state.leader_epoch,
            release=ctx.release,
        )
        if isinstance(result, AppendError):
            return _refused(index, result)
        checked = _producer_state(log, result, name)
        if isinstance(checked, int):
            return _failed(index, checked)
        if checked is not None:
            # A retry of a batch already written: its offsets, nothing appended; with
            # acks=all answered once the ISR has it, as the first attempt would have been
            # (Kafka's DelayedProduce waits on the duplicate's offsets too).
            if acks == -1:
                waits[tp] = checked.last_offset + 1
            return _appended(index, checked.first_offset, result.log_append_time, log)
        if result.record_count:
            log.append(
                result.records,
                base_offset=result.base_offset,
                last_offset=result.last_offset,
                max_timestamp=result.max_timestamp,
                offset_of_max_timestamp=result.offset_of_max_timestamp,
                leader_epoch=state.leader_epoch,
            )
            if acks == -1:
                waits[tp] = result.last_offset + 1
    return _appended(index, result.base_offset, result.log_append_time, log)


def _producer_state(
    log: PartitionLog, result: ValidatedAppend, name: str
) -> int | BatchMetadata | None:
    """UnifiedLog.analyzeAndValidateProducerState, duplicates first, then the checks: the
    batch already written (a retry), an error code, or None to append."""
    for info in result.producer:
        batch = _producer_batch(info, result.max_timestamp)
        duplicate = log.producers.duplicate(batch)
        if duplicate is not None:
            return duplicate
        problem = log.producers.check(batch, name)
        if problem is not None:
            return problem.code
        if not info.is_transactional and info.producer_id in log.transactions.ongoing:
            # ProducerAppendInfo: "Expected transactional write from producer ...".
            return error_codes.INVALID_TXN_STATE
    return None


def _appended(
    index: int, base_offset: int, log_append_time: int, log: PartitionLog
) -> PartitionProduceResponse:
    return PartitionProduceResponse(
        index=index,
        error_code=error_codes.NONE,
        base_offset=base_offset,
        log_append_time_ms=log_append_time,
        log_start_offset=log.log_start_offset,
    )


async def handle(ctx: RequestContext, request: ProduceRequest) -> ProduceResponse | NoResponse:
    acks = request.acks
    image = ctx.image
    writable = _writable(ctx, request)
    if isinstance(writable, ProduceResponse | NoResponse):
        return writable
    internal_allowed = ctx.header.client_id == ADMIN_CLIENT_ID
    pacer = Pacer()
    topics: list[TopicProduceResponse] = []
    hints: set[int] = set()
    # acks=all: the offset each appended partition's ISR must reach (DelayedProduce).
    waits: dict[tuple[str, int], int] = {}
    failed = False
    for topic in request.topic_data:
        answers: list[PartitionProduceResponse] = []
        known = image.topics.get(topic.name)
        denied = writable is not None and topic.name not in writable
        for data in topic.partition_data:
            if pacer.due():
                await pacer.pause()
            if denied:
                failed = True
                answers.append(_failed(data.index, error_codes.TOPIC_AUTHORIZATION_FAILED))
                continue
            answer = await _partition(
                ctx,
                topic.name,
                # Kafka checks its metadata cache first, which forgot a topic being deleted.
                known is not None
                and data.index in known.partitions
                and topic.name not in image.topics_being_deleted,
                data.index,
                data.records or b"",
                acks,
                internal_allowed,
                hints,
                request.transactional_id,
                waits,
            )
            failed = failed or answer.error_code != error_codes.NONE
            answers.append(answer)
        topics.append(TopicProduceResponse(name=topic.name, partition_responses=answers))
    if acks == 0:
        return NoResponse(close_reason="Produce with acks=0 failed" if failed else None)
    if waits:
        await _wait_for_replicas(ctx, topics, waits, request.timeout_ms)
    response = ProduceResponse(responses=topics)
    if ctx.version >= LEADER_HINT_VERSION:
        response.node_endpoints = [
            NodeEndpoint(node_id=b, host=info.host or "", port=info.port, rack=info.rack)
            for b in sorted(hints)
            if (info := image.brokers.get(b)) is not None
        ]
    return response


def _writable(
    ctx: RequestContext, request: ProduceRequest
) -> set[str] | ProduceResponse | NoResponse | None:
    """With an authorizer, the topics this request may write (or the answer refusing its
    transactional id); None without one."""
    if not auth.has_authorizer(ctx):
        return None
    if not _transactional_allowed(ctx, request):
        return error_response(
            request,
            ctx.version,
            error_codes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            auth.TRANSACTIONAL_ID_DENIED,
        )
    return auth.filter_authorized(ctx, auth.WRITE, auth.TOPIC, [t.name for t in request.topic_data])


async def _wait_for_replicas(
    ctx: RequestContext,
    topics: list[TopicProduceResponse],
    waits: dict[tuple[str, int], int],
    timeout_ms: int,
) -> None:
    """acks=all: each appended partition answers once its ISR has the records (or with
    NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER); the
    records stay written and the offsets are kept in the answer, as Kafka's DelayedProduce."""
    codes = await ctx.broker.replica_manager.wait_for_acks(waits, timeout_ms)
    for topic in topics:
        for answer in topic.partition_responses:
            code = codes.get((topic.name, answer.index), error_codes.NONE)
            if code != error_codes.NONE:
                answer.error_code = code


def _transactional_allowed(ctx: RequestContext, request: ProduceRequest) -> bool:
    """RequestUtils.hasTransactionalRecords (each partition's first batch), then WRITE on the
    transactional id, which must be there."""
    for topic in request.topic_data:
        for data in topic.partition_data:
            if _transactional_producer(data.records or b"") is not None:
                tid = request.transactional_id
                return tid is not None and auth.authorize(
                    ctx, auth.WRITE, auth.TRANSACTIONAL_ID, tid
                )
    return True


async def _partition(
    ctx: RequestContext,
    topic: str,
    known: bool,
    index: int,
    records: bytes,
    acks: int,
    internal_allowed: bool,
    hints: set[int],
    transactional_id: str | None,
    waits: dict[tuple[str, int], int],
) -> PartitionProduceResponse:
    """One partition's answer, the checks in Kafka's order (KafkaApis, then ReplicaManager)."""
    if not known:
        return _failed(index, error_codes.UNKNOWN_TOPIC_OR_PARTITION)
    shape = produce_request_errors(ctx.version, records, ctx.release)
    if shape is not None:
        return _refused(index, shape)
    if acks not in (-1, 0, 1):
        return _failed(index, error_codes.INVALID_REQUIRED_ACKS)
    if topic in INTERNAL_TOPICS and not internal_allowed:
        return _failed(index, error_codes.INVALID_TOPIC_EXCEPTION)
    located = locate(ctx.image, ctx.broker.broker_id, topic, index)
    if isinstance(located, Located):
        return await _append(ctx, located, index, records, acks, transactional_id, waits)
    answer = _failed(index, located)
    if located == error_codes.NOT_LEADER_OR_FOLLOWER:
        leader, epoch = leader_hint(ctx.image, topic, index)
        answer.current_leader = LeaderIdAndEpoch(leader_id=leader, leader_epoch=epoch)
        if leader >= 0:
            hints.add(leader)
    return answer


def error_response(
    request: ProduceRequest, version: int, code: int, message: str | None
) -> ProduceResponse | NoResponse:
    if request.acks == 0:
        # The client reads no answer to acks=0; Kafka closes the connection on failure.
        return NoResponse(close_reason=f"Produce with acks=0 failed: {error_codes.name_of(code)}")
    return ProduceResponse(
        responses=[
            TopicProduceResponse(
                name=t.name,
                partition_responses=[
                    PartitionProduceResponse(
                        index=p.index,
                        error_code=code,
                        base_offset=-1,
                        log_append_time_ms=-1,
                        log_start_offset=-1,
                        error_message=message,
                    )
                    for p in t.partition_data
                ],
            )
            for t in request.topic_data
        ]
    )
