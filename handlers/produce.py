"""Produce (key 0): records appended to the partition's log (docs/kafka-behaviour.md §15).

Kafka 3.9's flow (`KafkaApis.handleProduceRequest`, `ReplicaManager.appendRecords`,
`Partition.appendRecordsToLeader`, `UnifiedLog.append`):

1. `acks` other than -1, 0, 1: every partition INVALID_REQUIRED_ACKS;
2. per partition, in request order: the request shape of v3+ (`ProduceRequest.validateRecords`:
   one magic-2 batch, zstd from v7), an internal topic from anything but the admin client
   (INVALID_TOPIC_EXCEPTION), an unknown partition (UNKNOWN_TOPIC_OR_PARTITION), a partition
   this broker does not lead (NOT_LEADER_OR_FOLLOWER, with the leader hint of KIP-951 from
   v10), acks=-1 with an ISR smaller than `min.insync.replicas` (NOT_ENOUGH_REPLICAS), then
   the log's validation (`broker.rules.log_validation`: CRC, sizes, timestamps, KIP-467
   record errors, offsets assigned, LogAppendTime) and the append;
3. acks=0: no answer at all; if any partition failed, the connection is closed instead, as
   Kafka does so that the client notices.

Replicas share the partition's log, so acks=-1 is complete once the leader appended: the
high watermark is the log end offset.

Idempotent producers (`broker.rules.producer_state`): a retried batch already in the log is
answered with its offsets and not appended again; an old epoch is INVALID_PRODUCER_EPOCH, a
sequence gap OUT_OF_ORDER_SEQUENCE_NUMBER. Transactional batches are INVALID_TXN_STATE: no
transaction is ever ongoing until the transaction coordinator lands (Kafka 3.6+ verifies
each partition's first transactional write with the coordinator, KIP-890).

Deliberately not here: transactions, quotas and their throttle time, and authorization.
"""

from __future__ import annotations

import time

from broker.asyncutil import Pacer
from broker.image.metadata_image import INTERNAL_TOPICS
from broker.protocol import error_codes
from broker.protocol.messages.produce import (
    BatchIndexAndErrorMessage,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceResponse,
)
from broker.rules.log_validation import (
    AppendError,
    ProducerBatchInfo,
    produce_request_errors,
    validate_append,
)
from broker.rules.producer_state import ProducerBatch, last_sequence
from broker.storage import PartitionLog
from handlers.context import NoResponse, RequestContext
from handlers.support.partitions import Located, leader_hint, locate, open_log

API_KEY = 0
MIN_VERSION = 0
MAX_VERSION = 11

# Kafka's AdminUtils.AdminClientId: the one client id allowed to write internal topics.
ADMIN_CLIENT_ID = "__admin_client"
LEADER_HINT_VERSION = 10  # KIP-951


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


async def _append(
    ctx: RequestContext,
    located: Located,
    index: int,
    records: bytes,
    acks: int,
) -> PartitionProduceResponse:
    log, config = await open_log(ctx, located)
    state = located.partition
    if acks == -1 and len(state.isr) < config.min_insync_replicas:
        return _failed(index, error_codes.NOT_ENOUGH_REPLICAS)
    name = f"{located.topic.name}-{state.partition}"
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
        # UnifiedLog.analyzeAndValidateProducerState: duplicates first, then the checks.
        for info in result.producer:
            batch = _producer_batch(info, result.max_timestamp)
            duplicate = log.producers.duplicate(batch)
            if duplicate is not None:
                # A retry of a batch already written: its offsets, nothing appended.
                return _appended(index, duplicate.first_offset, result.log_append_time, log)
            if info.is_transactional:
                # No transaction coordinator yet, so no transaction is ever ongoing (3.6+
                # verification: KIP-890).
                return _failed(index, error_codes.INVALID_TXN_STATE)
            problem = log.producers.check(batch, name)
            if problem is not None:
                return _failed(index, problem.code)
        if result.record_count:
            log.append(
                result.records,
                base_offset=result.base_offset,
                last_offset=result.last_offset,
                max_timestamp=result.max_timestamp,
                offset_of_max_timestamp=result.offset_of_max_timestamp,
                leader_epoch=state.leader_epoch,
            )
    return _appended(index, result.base_offset, result.log_append_time, log)


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
    internal_allowed = ctx.header.client_id == ADMIN_CLIENT_ID
    pacer = Pacer()
    topics: list[TopicProduceResponse] = []
    hints: set[int] = set()
    failed = False
    for topic in request.topic_data:
        answers: list[PartitionProduceResponse] = []
        known = image.topics.get(topic.name)
        for data in topic.partition_data:
            if pacer.due():
                await pacer.pause()
            answer = await _partition(
                ctx,
                topic.name,
                known is not None and data.index in known.partitions,
                data.index,
                data.records or b"",
                acks,
                internal_allowed,
                hints,
            )
            failed = failed or answer.error_code != error_codes.NONE
            answers.append(answer)
        topics.append(TopicProduceResponse(name=topic.name, partition_responses=answers))
    if acks == 0:
        return NoResponse(close_reason="Produce with acks=0 failed" if failed else None)
    response = ProduceResponse(responses=topics)
    if ctx.version >= LEADER_HINT_VERSION:
        response.node_endpoints = [
            NodeEndpoint(node_id=b, host=info.host or "", port=info.port, rack=info.rack)
            for b in sorted(hints)
            if (info := image.brokers.get(b)) is not None
        ]
    return response


async def _partition(
    ctx: RequestContext,
    topic: str,
    known: bool,
    index: int,
    records: bytes,
    acks: int,
    internal_allowed: bool,
    hints: set[int],
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
        return await _append(ctx, located, index, records, acks)
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
