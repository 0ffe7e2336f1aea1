"""A leader in another zkbroker process, reached over its inter-broker listener.

Kafka's ``RemoteLeaderEndPoint`` (docs/kafka-behaviour.md §24): Fetch with the follower's
replica id (in ``ReplicaState`` from v15), sessionless (``session_epoch`` -1: every fetch is a
full one), OffsetsForLeaderEpoch and ListOffsets with the replica id, each at the newest
version the emulated release serves, over one connection of the inter-broker client
(`zkbroker.broker.peers.client`: the listener's TLS and SASL).

Not here: incremental fetch sessions for followers (a full fetch is valid at every version).
"""

from __future__ import annotations

import asyncio
import uuid

from zkbroker.broker.image.metadata_image import MetadataImage
from zkbroker.broker.peers.client import PeerClient, PeerUnavailable
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.api_keys import ApiKey
from zkbroker.broker.protocol.messages import fetch as fetch_messages
from zkbroker.broker.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from zkbroker.broker.protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from zkbroker.broker.protocol.releases import advertised_range
from zkbroker.broker.replication.fetch_source import (
    TP,
    EpochEnd,
    FetchedPartition,
    FetchPartition,
    SourceUnavailable,
)
from zkbroker.zk_layout.release import Release

_ZERO_UUID = uuid.UUID(int=0)
_EARLIEST, _LATEST = -2, -1
# Fetch versions: topic ids (KIP-516), the replica id inside ReplicaState (KIP-903).
_TOPIC_IDS_VERSION = 13
_REPLICA_STATE_VERSION = 15


def _newest(release: Release, key: ApiKey) -> int:
    served = advertised_range(release, key)
    if served is None:
        raise SourceUnavailable(f"{key.name} is not served by release {release}")
    return served[1]


class RemoteSource:
    """One leader broker of another process, for one follower broker."""

    def __init__(
        self,
        follower_id: int,
        broker_epoch: int,
        leader_id: int,
        image: MetadataImage,
        peers: PeerClient,
        release: Release,
    ) -> None:
        self._follower = follower_id
        self._broker_epoch = broker_epoch
        self._leader = leader_id
        self._image = image
        self._peers = peers
        self._release = release

    @property
    def leader_id(self) -> int:
        return self._leader

    async def _send(self, version: int, body: object) -> object:
        endpoint = self._peers.endpoint_of(self._image, self._leader)
        if endpoint is None:
            raise SourceUnavailable(f"broker {self._leader} has no inter-broker endpoint")
        try:
            return await self._peers.send(*endpoint, version, body)
        except PeerUnavailable as e:
            raise SourceUnavailable(str(e)) from e

    async def fetch(
        self,
        parts: list[FetchPartition],
        *,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        wake: asyncio.Event | None = None,
    ) -> dict[TP, FetchedPartition]:
        version = _newest(self._release, ApiKey.FETCH)
        request = self._fetch_request(version, parts, max_wait_ms, min_bytes, max_bytes)
        response = await self._send(version, request)
        assert isinstance(response, fetch_messages.FetchResponse)
        if response.error_code != error_codes.NONE:
            return {(p.topic, p.partition): FetchedPartition(response.error_code) for p in parts}
        by_id = {p.topic_id: p.topic for p in parts if p.topic_id is not None}
        out: dict[TP, FetchedPartition] = {}
        for topic in response.responses:
            name = by_id.get(topic.topic_id, "") if version >= _TOPIC_IDS_VERSION else topic.topic
            for data in topic.partitions:
                diverging = data.diverging_epoch
                out[(name, data.partition_index)] = FetchedPartition(
                    data.error_code,
                    high_watermark=data.high_watermark,
                    log_start_offset=data.log_start_offset,
                    records=data.records or b"",
                    diverging=None
                    if diverging.epoch < 0 and diverging.end_offset < 0
                    else (diverging.epoch, diverging.end_offset),
                )
        return out

    def _fetch_request(
        self,
        version: int,
        parts: list[FetchPartition],
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
    ) -> fetch_messages.FetchRequest:
        topics: dict[str, fetch_messages.FetchTopic] = {}
        for p in parts:
            topic = topics.get(p.topic)
            if topic is None:
                topic = topics[p.topic] = fetch_messages.FetchTopic(
                    topic=p.topic, topic_id=p.topic_id or _ZERO_UUID
                )
            topic.partitions.append(
                fetch_messages.FetchPartition(
                    partition=p.partition,
                    current_leader_epoch=p.current_leader_epoch,
                    fetch_offset=p.fetch_offset,
                    last_fetched_epoch=p.last_fetched_epoch,
                    log_start_offset=p.log_start_offset,
                    partition_max_bytes=p.max_bytes,
                )
            )
        request = fetch_messages.FetchRequest(
            max_wait_ms=max_wait_ms,
            min_bytes=min_bytes,
            max_bytes=max_bytes,
            session_id=0,
            session_epoch=-1,
            topics=list(topics.values()),
        )
        if version >= _REPLICA_STATE_VERSION:
            request.replica_state = fetch_messages.ReplicaState(
                replica_id=self._follower, replica_epoch=self._broker_epoch
            )
        else:
            request.replica_id = self._follower
        return request

    async def epoch_ends(self, wanted: list[tuple[TP, int, int]]) -> dict[TP, EpochEnd]:
        version = _newest(self._release, ApiKey.OFFSET_FOR_LEADER_EPOCH)
        topics: dict[str, OffsetForLeaderTopic] = {}
        for (topic, partition), current, epoch in wanted:
            entry = topics.setdefault(topic, OffsetForLeaderTopic(topic=topic))
            entry.partitions.append(
                OffsetForLeaderPartition(
                    partition=partition, current_leader_epoch=current, leader_epoch=epoch
                )
            )
        request = OffsetForLeaderEpochRequest(
            replica_id=self._follower, topics=list(topics.values())
        )
        response = await self._send(version, request)
        assert isinstance(response, OffsetForLeaderEpochResponse)
        return {
            (t.topic, p.partition): EpochEnd(p.error_code, p.leader_epoch, p.end_offset)
            for t in response.topics
            for p in t.partitions
        }

    async def log_offsets(self, tp: TP, current_leader_epoch: int) -> tuple[int, int, int]:
        version = _newest(self._release, ApiKey.LIST_OFFSETS)
        found: list[int] = []
        for timestamp in (_EARLIEST, _LATEST):
            request = ListOffsetsRequest(
                replica_id=self._follower,
                topics=[
                    ListOffsetsTopic(
                        name=tp[0],
                        partitions=[
                            ListOffsetsPartition(
                                partition_index=tp[1],
                                current_leader_epoch=current_leader_epoch,
                                timestamp=timestamp,
                            )
                        ],
                    )
                ],
            )
            response = await self._send(version, request)
            assert isinstance(response, ListOffsetsResponse)
            answer = response.topics[0].partitions[0]
            if answer.error_code != error_codes.NONE:
                return answer.error_code, -1, -1
            found.append(answer.offset if version >= 1 else answer.old_style_offsets[0])
        return error_codes.NONE, found[0], found[1]

    async def close(self) -> None:
        """The connection belongs to the replica manager's client, closed with it."""
