"""TxnOffsetCommit: a consumer group's offsets inside a transaction.

Kafka 3.9's ``KafkaApis.handleTxnOffsetCommitRequest`` and ``GroupCoordinator``'s
transactional commit (docs/kafka-behaviour.md §17): authorization first (WRITE on the
transactional id, READ on the group, READ per topic), unknown partitions, the group's
coordinator status, from 3.7 the KIP-890 verification
(``zkbroker.broker.rules.transactions.verification``), then the offsets are written as the
producer's transactional records, pending until the marker
(``GroupStateMachine.commit_txn_offsets``).

Not here: ZooKeeper-registry groups (transactional offsets live only in ``__consumer_offsets``,
as in Kafka).
"""

from __future__ import annotations

from zkbroker.broker.asyncutil import now_ms
from zkbroker.broker.groups.coordinator import OFFSETS_TOPIC
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)
from zkbroker.broker.rules.groups.classic_group import CommittedOffset
from zkbroker.broker.rules.transactions.verification import (
    TXN_OFFSET_COMMIT_VERIFICATION_RELEASE,
    txn_offset_commit_error,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.group_coordination import (
    coordinator,
    group_status,
    offsets_topic_ready,
    partition_code_answers,
)
from zkbroker.handlers.support.partitions import Located, locate, open_log
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.TXN_OFFSET_COMMIT
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "offsets pending in the producer's transaction until its marker; v3+ generation/member "
    "checks (KIP-447); KIP-890 verification (3.6+)"
)

GROUP_METADATA_VERSION = 3  # KIP-447: generation, member id, instance id

TopicPartition = tuple[str, int]


async def handle(ctx: RequestContext, request: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
    image = ctx.image
    readable: set[str] | None = None
    if auth.has_authorizer(ctx):
        if not auth.authorize(ctx, auth.WRITE, auth.TRANSACTIONAL_ID, request.transactional_id):
            code = error_codes.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            return error_response(request, ctx.version, code, None)
        if not auth.authorize(ctx, auth.READ, auth.GROUP, request.group_id):
            code = error_codes.GROUP_AUTHORIZATION_FAILED
            return error_response(request, ctx.version, code, None)
        readable = auth.filter_authorized(
            ctx, auth.READ, auth.TOPIC, [t.name for t in request.topics]
        )
    codes: dict[TopicPartition, int] = {}
    wanted: dict[TopicPartition, CommittedOffset] = {}
    now = now_ms()
    for topic in request.topics:
        known = image.topics.get(topic.name)
        denied = readable is not None and topic.name not in readable
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if denied:
                codes[tp] = error_codes.TOPIC_AUTHORIZATION_FAILED
            elif known is None or p.partition_index not in known.partitions:
                codes[tp] = error_codes.UNKNOWN_TOPIC_OR_PARTITION
            else:
                wanted[tp] = CommittedOffset(
                    offset=p.committed_offset,
                    leader_epoch=p.committed_leader_epoch if ctx.version >= 2 else -1,
                    metadata=p.committed_metadata or "",
                    commit_timestamp=now,
                    expire_timestamp=None,
                )
    if wanted:
        codes.update(await _commit(ctx, request, wanted, now))
    return _response(request, codes)


async def _commit(
    ctx: RequestContext,
    request: TxnOffsetCommitRequest,
    wanted: dict[TopicPartition, CommittedOffset],
    now: int,
) -> dict[TopicPartition, int]:
    group_id = request.group_id
    if not group_id:
        return dict.fromkeys(wanted, error_codes.INVALID_GROUP_ID)
    if not offsets_topic_ready(ctx):
        return dict.fromkeys(wanted, error_codes.COORDINATOR_NOT_AVAILABLE)
    status = group_status(ctx, group_id)
    if status != error_codes.NONE:
        return dict.fromkeys(wanted, status)
    verified = await _verify(ctx, request)
    if verified != error_codes.NONE:
        return dict.fromkeys(wanted, verified)
    with_members = ctx.version >= GROUP_METADATA_VERSION
    gc = coordinator(ctx)
    mark = gc.mark(group_id)
    result = gc.machine.commit_txn_offsets(
        group_id,
        request.producer_id,
        request.producer_epoch,
        request.member_id if with_members else "",
        request.group_instance_id if with_members else None,
        request.generation_id if with_members else -1,
        wanted,
        now,
    )
    gc.touch(group_id)
    return await gc.commit_replicated(mark, result)


async def _verify(ctx: RequestContext, request: TxnOffsetCommitRequest) -> int:
    """KIP-890 part 1 for the group's ``__consumer_offsets`` partition: from 3.7 (3.6's
    ZooKeeper-mode group coordinator wrote transactional offsets unverified)."""
    if ctx.release < TXN_OFFSET_COMMIT_VERIFICATION_RELEASE:
        return error_codes.NONE
    partition = coordinator(ctx).partition_for(request.group_id)
    if partition is None:
        return error_codes.COORDINATOR_NOT_AVAILABLE
    located = locate(ctx.image, ctx.broker.broker_id, OFFSETS_TOPIC, partition)
    if not isinstance(located, Located):
        return located
    log, _config = await open_log(ctx, located)
    pid, epoch = request.producer_id, request.producer_epoch
    if pid in log.transactions.ongoing:
        return error_codes.NONE  # hasOngoingTransaction(producerId): the id only, until 4.0
    answers = await ctx.broker.transaction_coordinator.verify_for_produce(
        request.transactional_id, pid, epoch, [(OFFSETS_TOPIC, partition)]
    )
    code = answers.get((OFFSETS_TOPIC, partition), error_codes.UNKNOWN_SERVER_ERROR)
    if code == error_codes.NONE:
        return code
    return txn_offset_commit_error(code, ctx.release, ctx.version)


def _response(
    request: TxnOffsetCommitRequest, codes: dict[TopicPartition, int]
) -> TxnOffsetCommitResponse:
    return TxnOffsetCommitResponse(
        topics=partition_code_answers(
            request.topics,
            lambda t, p: codes[(t, p)],
            TxnOffsetCommitResponseTopic,
            TxnOffsetCommitResponsePartition,
        )
    )


def error_response(
    request: TxnOffsetCommitRequest, version: int, code: int, message: str | None
) -> TxnOffsetCommitResponse:
    codes = {(t.name, p.partition_index): code for t in request.topics for p in t.partitions}
    return _response(request, codes)
