"""Cluster-wide singleton nodes: ``/cluster``, ``/cluster/id``, ``/latest_producer_id_block`` and
the old-consumer root ``/consumers``.

* ``/cluster/id``: ``{"version":"1","id":"<22-char base64url uuid>"}`` — ``version`` is a
  *string* here, unlike every other node. Readers use only ``id`` (Kafka fails on anything it
  cannot parse, so this does too).
* ``/latest_producer_id_block``: ``{"version":1,"broker":0,"block_start":"0","block_end":"999"}``
  with the bounds as *strings* (Java longs). The node is created with null data at broker start,
  which means "no block allocated yet": ``decode(b"")`` returns None.

Deliberately not here: the read-then-create race handling of the cluster id and the conditional
update loop of producer-id blocks (``ZkStore.get_or_create_cluster_id`` does the former; the
latter belongs to whoever emulates InitProducerId).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from zkbroker.zk_layout import codec_json as cj
from zkbroker.zk_layout.errors import ZnodeFormatError
from zkbroker.zk_layout.nodes.base import EmptyNode, ZNode
from zkbroker.zk_layout.release import Release

PRODUCER_ID_BLOCK_SIZE: Final = 1000


@dataclass(frozen=True)
class ProducerIdBlock:
    broker_id: int
    block_start: int
    block_end: int

    @property
    def size(self) -> int:
        return self.block_end - self.block_start + 1

    @classmethod
    def after(cls, previous: ProducerIdBlock | None, broker_id: int) -> ProducerIdBlock:
        """The next block a broker claims: 0..999 first, then contiguous blocks of 1000."""
        start = 0 if previous is None else previous.block_end + 1
        end = start + PRODUCER_ID_BLOCK_SIZE - 1
        if end > cj.INT64_MAX:
            raise OverflowError("producer ids exhausted")
        return cls(broker_id, start, end)


class ClusterNode(EmptyNode, name="cluster"):
    """``/cluster``: parent of the cluster id."""


class ClusterIdNode(ZNode[str], parent=ClusterNode, name="id"):
    FORMAT_VERSIONS = (1,)

    @classmethod
    def written_version(cls, release: Release) -> int:
        return 1

    @classmethod
    def encode(cls, value: str, release: Release) -> bytes:
        return cj.dumps({"version": "1", "id": value})

    @classmethod
    def decode(cls, data: bytes) -> str:
        doc = cj.parse_object(data, cls.PATTERN)
        return cj.get_str(doc, "id", cls.PATTERN)


class ProducerIdBlockNode(ZNode[ProducerIdBlock | None], name="latest_producer_id_block"):
    FORMAT_VERSIONS = (1,)

    @classmethod
    def written_version(cls, release: Release) -> int:
        return 1

    @classmethod
    def encode(cls, value: ProducerIdBlock | None, release: Release) -> bytes:
        if value is None:
            return b""
        return cj.dumps(
            {
                "version": 1,
                "broker": value.broker_id,
                "block_start": str(value.block_start),
                "block_end": str(value.block_end),
            }
        )

    @classmethod
    def decode(cls, data: bytes) -> ProducerIdBlock | None:
        where = cls.PATTERN
        if not data:
            return None
        doc = cj.parse_object(data, where)
        start = cj.parse_decimal_int(
            cj.get_str(doc, "block_start", where), where, "block_start", bits=64
        )
        end = cj.parse_decimal_int(cj.get_str(doc, "block_end", where), where, "block_end", bits=64)
        if end < start:
            raise ZnodeFormatError(where, f"block_end {end} < block_start {start}")
        return ProducerIdBlock(cj.get_int(doc, "broker", where), start, end)


class ConsumersNode(EmptyNode, name="consumers"):
    """``/consumers``: root of the pre-0.9 consumer's offsets; Kafka still creates it."""
