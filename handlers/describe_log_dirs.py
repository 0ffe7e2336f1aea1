"""DescribeLogDirs: this broker's log dir and the size of each partition log in it (KIP-113).

Follows Kafka 3.9's flow, authorization included (docs/kafka-behaviour.md §15, "Log dirs").
"A log on this broker" means being in the partition's replica set
(`zkbroker.handlers.support.partitions`), each replica reporting its own log's size. The
one log dir and its volume come from `zkbroker.handlers.support.log_dirs` (in memory: the
configured path, sizes -1). Results are in topic-name and partition order (Kafka's follow hash
maps).

Not here: several log dirs, offline dirs, future logs.
"""

from __future__ import annotations

from zkbroker.broker.asyncutil import Pacer
from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.describe_log_dirs import (
    DescribeLogDirsPartition,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeLogDirsResult,
    DescribeLogDirsTopic,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.log_dirs import log_dir, volume_bytes
from zkbroker.handlers.support.partitions import Located, open_log
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.DESCRIBE_LOG_DIRS
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "the broker's one log dir (`--log-dir`, or the configured `log.dirs`/`log.dir` in "
    "memory) with each hosted partition's log size; total/usable bytes (v4) from the "
    "volume, -1 in memory"
)

_log = get_logger(__name__)


def _hosted(ctx: RequestContext, wanted: set[tuple[str, int]] | None) -> list[Located]:
    """The partitions this broker has a log of (in its replica set, topic not being deleted,
    whose replicas Kafka has stopped and whose logs it has removed), limited to `wanted`."""
    image = ctx.image
    broker_id = ctx.broker.broker_id
    found: list[Located] = []
    for name in sorted(image.topics):
        if name in image.topics_being_deleted:
            continue
        topic = image.topics[name]
        for index in sorted(topic.partitions):
            state = topic.partitions[index]
            if broker_id in state.replicas and (wanted is None or (name, index) in wanted):
                found.append(Located(topic, state))
    return found


async def handle(ctx: RequestContext, request: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    if not auth.authorize_cluster(ctx, auth.DESCRIBE):  # KafkaApis: authorize(DESCRIBE, CLUSTER)
        return error_response(request, ctx.version, error_codes.CLUSTER_AUTHORIZATION_FAILED, None)
    path = log_dir(ctx)
    try:
        total, usable = volume_bytes(ctx, path)
    except OSError as e:
        # Kafka catches the failure per dir: the dir is answered with the error, no topics.
        _log.warning("describe_log_dirs.volume_failed", log_dir=path, reason=str(e))
        failed = DescribeLogDirsResult(error_code=error_codes.UNKNOWN_SERVER_ERROR, log_dir=path)
        return DescribeLogDirsResponse(error_code=error_codes.NONE, results=[failed])
    wanted = (
        None
        if request.topics is None
        else {(t.topic, index) for t in request.topics for index in t.partitions}
    )
    pacer = Pacer()
    topics: list[DescribeLogDirsTopic] = []
    for located in _hosted(ctx, wanted):
        if pacer.due():
            await pacer.pause()
        log, _config = await open_log(ctx, located)
        # On disk the lock also indexes what other processes appended, so the size is current.
        with log.append_lock():
            size = log.size_bytes
        name = located.topic.name
        if not topics or topics[-1].name != name:
            topics.append(DescribeLogDirsTopic(name=name, partitions=[]))
        topics[-1].partitions.append(
            DescribeLogDirsPartition(
                partition_index=located.partition.partition,
                partition_size=size,
                # Kafka's getLogEndOffsetLag, max(high watermark - log end offset, 0): 0 for
                # any log but a future one (no replica's high watermark passes its log end).
                offset_lag=0,
                is_future_key=False,
            )
        )
    result = DescribeLogDirsResult(
        error_code=error_codes.NONE,
        log_dir=path,
        topics=topics,
        total_bytes=total,
        usable_bytes=usable,
    )
    return DescribeLogDirsResponse(error_code=error_codes.NONE, results=[result])


def error_response(
    request: DescribeLogDirsRequest, version: int, code: int, message: str | None
) -> DescribeLogDirsResponse:
    # Kafka's `DescribeLogDirsRequest.getErrorResponse`: the top-level code (v3+) and no
    # results, so before v3 the error shows only as an empty answer.
    return DescribeLogDirsResponse(error_code=code, results=[])
