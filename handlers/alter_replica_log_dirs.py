"""AlterReplicaLogDirs: move a replica's log to another log dir of the broker (KIP-113).

Follows Kafka 3.9's checks, authorization included (docs/kafka-behaviour.md §15, "Log dirs").
A zkbroker broker has one log dir (`zkbroker.handlers.support.log_dirs`), so a hosted partition
is always already there: NONE, nothing moves. Answers are grouped by topic in the order the
request first names them (Kafka's follow a hash map's order).

Not here: several log dirs, future logs, moving data.
"""

from __future__ import annotations

from zkbroker.broker.asyncutil import Pacer
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages.alter_replica_log_dirs import (
    AlterReplicaLogDirPartitionResult,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse,
    AlterReplicaLogDirTopicResult,
)
from zkbroker.handlers.context import RequestContext
from zkbroker.handlers.support import authorization as auth
from zkbroker.handlers.support.log_dirs import log_dir
from zkbroker.handlers.support.partitions import Located, locate
from zkbroker.handlers.support.zk_trouble import Family

API_KEY = ApiKey.ALTER_REPLICA_LOG_DIRS
ZK_TROUBLE_FAMILY = Family.OTHER
README_NOTE = (
    "NONE for the broker's own dir (nothing moves); LOG_DIR_NOT_FOUND, "
    "UNKNOWN_TOPIC_OR_PARTITION, REPLICA_NOT_AVAILABLE as Kafka answers them"
)

# A file name's limit, and what `LocalLog.logFutureDirName` adds to "<topic>-<partition>":
# "." + a dashless UUID (32) + "-future" (7).
MAX_DIR_NAME = 255
FUTURE_DIR_EXTRA = 1 + 32 + len("-future")


def _alter(ctx: RequestContext, topic: str, index: int, path: str, own_dir: str) -> int:
    if len(f"{topic}-{index}") + FUTURE_DIR_EXTRA > MAX_DIR_NAME:
        return error_codes.INVALID_TOPIC_EXCEPTION
    if path != own_dir:
        return error_codes.LOG_DIR_NOT_FOUND
    located = locate(ctx.image, ctx.broker.broker_id, topic, index, leader_only=False)
    if isinstance(located, Located):
        return error_codes.NONE  # already in this (the only) dir: nothing to move
    if located == error_codes.NOT_LEADER_OR_FOLLOWER:
        return error_codes.REPLICA_NOT_AVAILABLE
    return located


async def handle(
    ctx: RequestContext, request: AlterReplicaLogDirsRequest
) -> AlterReplicaLogDirsResponse:
    if not auth.authorize_cluster(ctx, auth.ALTER):  # KafkaApis: authorize(ALTER, CLUSTER)
        return error_response(request, ctx.version, error_codes.CLUSTER_AUTHORIZATION_FAILED, None)
    own_dir = log_dir(ctx)
    # Kafka's `partitionDirs`: one entry per partition, a later dir replacing an earlier one.
    targets: dict[tuple[str, int], str] = {}
    for wanted in request.dirs:
        for topic in wanted.topics:
            for index in topic.partitions:
                targets[(topic.name, index)] = wanted.path
    pacer = Pacer()
    by_topic: dict[str, list[AlterReplicaLogDirPartitionResult]] = {}
    for (name, index), path in targets.items():
        if pacer.due():
            await pacer.pause()
        code = _alter(ctx, name, index, path, own_dir)
        by_topic.setdefault(name, []).append(
            AlterReplicaLogDirPartitionResult(partition_index=index, error_code=code)
        )
    return AlterReplicaLogDirsResponse(
        results=[
            AlterReplicaLogDirTopicResult(topic_name=name, partitions=partitions)
            for name, partitions in by_topic.items()
        ]
    )


def error_response(
    request: AlterReplicaLogDirsRequest, version: int, code: int, message: str | None
) -> AlterReplicaLogDirsResponse:
    # Kafka's `AlterReplicaLogDirsRequest.getErrorResponse`: every partition as named, per
    # dir and topic, duplicates kept.
    return AlterReplicaLogDirsResponse(
        results=[
            AlterReplicaLogDirTopicResult(
                topic_name=t.name,
                partitions=[
                    AlterReplicaLogDirPartitionResult(partition_index=index, error_code=code)
                    for index in t.partitions
                ],
            )
            for d in request.dirs
            for t in d.topics
        ]
    )
