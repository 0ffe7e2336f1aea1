"""Records for tests: produce through the Produce handler, read a partition's log back, read a
group's committed offsets through the OffsetFetch handler.

`produce` builds one magic-2 batch and hands it to the partition leader's Produce handler
(`zkbroker.handlers.produce`, acks=-1, the newest version the emulated release serves), so a test's
records take the path a client's do: leadership, validation, offsets, producer state.
`records` decodes every record of a partition's log from its log start offset, transaction
markers left out, without a request: what a test asserts on after clients produced.
`committed_offsets` asks this process's brokers, as OffsetFetch (the v7 shape: every partition
of the group, top-level error), until the group's coordinator answers: the offsets a consumer
committed (``__consumer_offsets``) or a ZooKeeper registry group holds, as a client reads them.

Deliberately not here: consuming as a client does (groups, commits: use a real client), a
coordinator in another zkbroker process (its brokers are not asked), and anything the wire path
would not do.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence

from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.protocol import RequestHeader, error_codes
from zkbroker.broker.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from zkbroker.broker.protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)
from zkbroker.broker.protocol.records import (
    NewRecord,
    Record,
    RecordBatchV2,
    encode_batch,
    iter_batches,
)
from zkbroker.broker.server.broker_node import BrokerNode
from zkbroker.broker.storage import LogManager
from zkbroker.handlers import offset_fetch as offset_fetch_handler
from zkbroker.handlers import produce as produce_handler
from zkbroker.handlers.context import ConnectionInfo, RequestContext

CLIENT_ID = "zkbroker-cluster"

Message = tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes | None]]]
"""(key, value, headers) of one record to produce."""


# OffsetFetch v7: null topics mean every committed partition, errors at the top level.
_OFFSET_FETCH_VERSION = 7
# How long `committed_offsets` waits for a coordinator that is loading its partition.
_LOAD_WAIT_S = 10.0


class OffsetsUnavailable(Exception):
    """No broker of this process could answer for the group (Kafka's error code in `code`)."""

    def __init__(self, group: str, code: int) -> None:
        super().__init__(f"{error_codes.name_of(code)}: committed offsets of group {group!r}")
        self.code = code


class ProduceFailed(Exception):
    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(f"{error_codes.name_of(code)}: {message or 'produce failed'}")
        self.code = code


async def produce(
    brokers: dict[int, BrokerNode],
    image: MetadataImage,
    topic: str,
    partition: int,
    messages: Sequence[Message],
) -> int:
    """Append `messages` as one batch through the leader's Produce handler; the base offset."""
    found = image.topics.get(topic)
    state = None if found is None else found.partitions.get(partition)
    if state is None:
        raise ProduceFailed(error_codes.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{partition}")
    leader = brokers.get(state.leader)
    if leader is None or not leader.running:
        raise ProduceFailed(
            error_codes.NOT_LEADER_OR_FOLLOWER,
            f"the leader of {topic}-{partition} ({state.leader}) is not a running broker of "
            "this process",
        )
    now = int(time.time() * 1000)
    batch = encode_batch(
        [
            NewRecord(
                offset=i,
                timestamp=now,
                key=key,
                value=value,
                headers=tuple((k.encode(), v) for k, v in headers),
            )
            for i, (key, value, headers) in enumerate(messages)
        ]
    )
    version = leader.api_table.ranges[produce_handler.API_KEY][1]
    ctx = _context(leader, produce_handler.API_KEY, version)
    request = ProduceRequest(
        acks=-1,
        timeout_ms=30_000,
        topic_data=[
            TopicProduceData(
                name=topic, partition_data=[PartitionProduceData(index=partition, records=batch)]
            )
        ],
    )
    response = await produce_handler.handle(ctx, request)
    assert isinstance(response, ProduceResponse)
    answer = response.responses[0].partition_responses[0]
    if answer.error_code != error_codes.NONE:
        raise ProduceFailed(answer.error_code, answer.error_message)
    return answer.base_offset


def _context(node: BrokerNode, api_key: int, version: int) -> RequestContext:
    return RequestContext(
        header=RequestHeader(
            api_key=api_key, api_version=version, correlation_id=0, client_id=CLIENT_ID
        ),
        broker=node,
        connection=ConnectionInfo(connection_id="cluster", peer="local", listener_name="local"),
    )


async def committed_offsets(
    brokers: dict[int, BrokerNode], group: str
) -> dict[tuple[str, int], int]:
    """The group's committed offsets by (topic, partition), from its coordinator among
    `brokers`; partitions without an offset are left out. Raises `OffsetsUnavailable` when no
    running broker coordinates the group (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE while
    ``__consumer_offsets`` does not exist or has no leader here)."""
    deadline = time.monotonic() + _LOAD_WAIT_S
    while True:
        codes = set()
        for _, node in sorted(brokers.items()):
            if not node.running:
                continue
            ctx = _context(node, offset_fetch_handler.API_KEY, _OFFSET_FETCH_VERSION)
            response = await offset_fetch_handler.handle(
                ctx, OffsetFetchRequest(group_id=group, topics=None)
            )
            assert isinstance(response, OffsetFetchResponse)
            if response.error_code == error_codes.NONE:
                return {
                    (t.name, p.partition_index): p.committed_offset
                    for t in response.topics
                    for p in t.partitions
                    if p.error_code == error_codes.NONE and p.committed_offset >= 0
                }
            codes.add(response.error_code)
        # Only a partition being loaded is worth waiting for: it ends by itself.
        loading = error_codes.COORDINATOR_LOAD_IN_PROGRESS in codes
        if not loading or time.monotonic() > deadline:
            code = min(codes - {error_codes.NOT_COORDINATOR}, default=error_codes.NOT_COORDINATOR)
            raise OffsetsUnavailable(
                group, code if codes else error_codes.COORDINATOR_NOT_AVAILABLE
            )
        await asyncio.sleep(0.05)


def records(
    logs: LogManager,
    topic: str,
    partition: int,
    topic_id: uuid.UUID | None = None,
    exists: bool = False,
) -> list[Record]:
    """Every record of the partition's log from its log start offset (markers left out).

    The log of an existing partition (``exists``) is opened if this process has not used it
    yet: with ``--log-dir`` it may hold records written before a restart."""
    log = logs.get_or_create(topic, partition, topic_id) if exists else logs.get(topic, partition)
    if log is None:
        return []
    out: list[Record] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        if not data:
            break
        for batch in iter_batches(data):
            offset = batch.last_offset + 1
            if isinstance(batch, RecordBatchV2) and batch.is_control:
                continue
            out.extend(r for r in batch.records() if r.offset >= log.log_start_offset)
    return out
