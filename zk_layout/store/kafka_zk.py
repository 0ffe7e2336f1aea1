"""Kafka's ZooKeeper recipes (Kafka's ``KafkaZkClient``) on top of the kazoo bridge.

``ZkStore`` is ``ZkClient`` (``zkbroker.zk_layout.store.client``: sessions, pipelined reads,
multi-op and fenced transactions, persistent watches) plus the multi-step ZooKeeper recipes a Kafka
broker and controller perform: the persistent top-level paths, broker registration, broker sequence
ids, the cluster id, the controller election, and a pre-2.7 partition leader's own ISR write with
its batched ``/isr_change_notification`` (docs/kafka-behaviour.md §1.4, §1.9, §10.3). As in
Kafka, where ``KafkaZkClient`` sits on ``ZooKeeperClient``, the bridge knows nothing of Kafka and
the recipes know nothing of kazoo.

Deliberately not here: the controller's watch/failover loop (``zkbroker.broker.controller``), the
admin path's writes (``zkbroker.zk_layout.store.admin_zk``), retries, when a leader changes its
ISR and when it sends its batch of ISR changes (the replica manager's).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from zkbroker.zk_layout.errors import (
    BadVersionError,
    BrokerIdInUseError,
    NodeExistsError,
    NoNodeError,
    ZnodeFormatError,
)
from zkbroker.zk_layout.nodes import PERSISTENT_ZK_PATHS, acl_persistent_paths
from zkbroker.zk_layout.nodes.base import TopicPartition
from zkbroker.zk_layout.nodes.brokers import BrokerIdNode, BrokerInfo, BrokerSeqIdNode
from zkbroker.zk_layout.nodes.cluster import ClusterIdNode, ProducerIdBlock, ProducerIdBlockNode
from zkbroker.zk_layout.nodes.controller import (
    INITIAL_CONTROLLER_EPOCH,
    ControllerEpochNode,
    ControllerInfo,
    ControllerNode,
)
from zkbroker.zk_layout.nodes.notifications import IsrChangeNotificationNode
from zkbroker.zk_layout.nodes.topics import PartitionState, PartitionStateNode
from zkbroker.zk_layout.release import Release
from zkbroker.zk_layout.store.client import ZkClient
from zkbroker.zk_layout.uuid_text import random_uuid_text

# Encoders whose output does not depend on the release still take one.
_RELEASE_INDEPENDENT: Final[Release] = (3, 9)


@dataclass(frozen=True)
class ElectionResult:
    """Outcome of one ``elect_controller`` attempt.

    ``controller_id`` is the controller ZooKeeper names now (None if ``/controller`` is absent or
    unreadable); ``epoch``/``epoch_zk_version`` are ``/controller_epoch``'s value and data version
    as last read — for a winner, the ones to fence its writes with.
    """

    won: bool
    controller_id: int | None
    epoch: int
    epoch_zk_version: int


class ZkStore(ZkClient):
    """The kazoo bridge plus Kafka's recipes; what every other layer uses."""

    async def _ensure_all(self, paths: Iterable[str]) -> None:
        await asyncio.gather(*(self.ensure_path(p) for p in paths))

    async def create_top_level_paths(self) -> None:
        """Create every path of ``ZkData.PersistentZkPaths`` (null data, parents included);
        existing ones are left alone. Idempotent."""
        await self._ensure_all(PERSISTENT_ZK_PATHS)

    async def create_acl_paths(self) -> None:
        """Create the ACL store roots, their per-type children and the change roots, as
        ``AclAuthorizer`` does at start. Idempotent."""
        await self._ensure_all(acl_persistent_paths())

    async def register_broker(self, info: BrokerInfo, release: Release) -> int:
        """Kafka's ``registerBroker``/``checkedEphemeralCreate``: one multi of
        ``create(/brokers/ids/<id>, null, EPHEMERAL)`` + ``set(data, version 0)``, so the node's
        data version is 1. Returns its czxid, the broker epoch.

        If the node exists and this very session owns it (a retry after a connection blip), its
        czxid is returned as Kafka does; if another session owns it, ``BrokerIdInUseError``.
        ``/brokers/ids`` must exist (``create_top_level_paths``).
        """
        path = BrokerIdNode.path(info.broker_id)
        data = BrokerIdNode.encode(info, release)
        tx = self.transaction().create(path, None, ephemeral=True).set(path, data, 0)
        try:
            _created, stat = await tx.commit()
            return int(stat.czxid)
        except NodeExistsError:
            pass
        existing = await self.exists(path)
        session = self.session_id
        if existing is not None and session is not None and existing.ephemeralOwner == session:
            return int(existing.czxid)
        owner = None if existing is None else int(existing.ephemeralOwner)
        raise BrokerIdInUseError(info.broker_id, path, owner)

    async def next_broker_sequence_id(
        self, reserved_broker_max_id: int = BrokerSeqIdNode.DEFAULT_RESERVED_BROKER_MAX_ID
    ) -> int:
        """Kafka's ``generateBrokerSequenceId``: bump ``/brokers/seqid``'s data version with an
        unconditional empty set and add ``reserved.broker.max.id``."""
        path = BrokerSeqIdNode.path()
        try:
            stat = await self.set(path, b"", -1)
        except NoNodeError:
            await self.ensure_path(path)
            stat = await self.set(path, b"", -1)
        return int(stat.version) + reserved_broker_max_id

    async def get_or_create_cluster_id(self) -> str:
        """Read ``/cluster/id``; if absent create it with a fresh random id (``/cluster`` with
        null data if needed). A concurrent creator wins: its id is returned."""
        got = await self.read(ClusterIdNode)
        if got is not None:
            return got[0]
        candidate = random_uuid_text()
        try:
            await self.create(
                ClusterIdNode.path(),
                ClusterIdNode.encode(candidate, _RELEASE_INDEPENDENT),
                makepath=True,
            )
            return candidate
        except NodeExistsError:
            pass
        got = await self.read(ClusterIdNode)
        if got is None:  # created and deleted in between: extremely unlikely, try once more
            return await self.get_or_create_cluster_id()
        return got[0]

    async def claim_producer_id_block(self, broker_id: int) -> ProducerIdBlock:
        """Kafka's ``ZkProducerIdManager.getNewProducerIdBlock``: read
        ``/latest_producer_id_block``, write the block after it conditionally on the version
        read (create it when absent), and retry when another broker claimed one meanwhile."""
        path = ProducerIdBlockNode.path()
        while True:
            got = await self.get(path)
            previous = None if got is None else ProducerIdBlockNode.decode(got[0] or b"")
            block = ProducerIdBlock.after(previous, broker_id)
            data = ProducerIdBlockNode.encode(block, _RELEASE_INDEPENDENT)
            try:
                if got is None:
                    await self.create(path, data, makepath=True)
                else:
                    await self.set(path, data, got[1].version)
            except (BadVersionError, NodeExistsError):
                continue  # another broker took the next block: read again
            return block

    async def update_leader_and_isr(
        self, topic: str, partition: int, state: PartitionState, expected_version: int
    ) -> int | None:
        """A partition leader's own ISR write before Kafka 2.7 (``ReplicationUtils
        .updateLeaderAndIsr``): set ``.../partitions/<p>/state`` to ``state`` conditionally on
        the data version the leader knows; the new data version, or None when the node moved
        on or is gone (Kafka's leader then keeps its ISR and waits for the controller).

        ``state`` is written as it is: the leader keeps the leader epoch and the controller
        epoch of the LeaderAndIsr that made it leader (not the current controller's), and the
        write is not fenced. On BADVERSION the node is read back and, when it already holds
        exactly ``state``, its version is the answer (Kafka's ``checkLeaderAndIsrZkData``, for a
        write retried after a lost connection): so calling again after a ``ZkConnectionError``
        is safe."""
        path = PartitionStateNode.path(topic, partition)
        try:
            stat = await self.set(
                path, PartitionStateNode.encode(state, _RELEASE_INDEPENDENT), expected_version
            )
        except NoNodeError:
            return None
        except BadVersionError:
            return await self._version_if_written(topic, partition, state)
        return int(stat.version)

    async def _version_if_written(
        self, topic: str, partition: int, state: PartitionState
    ) -> int | None:
        try:
            got = await self.read(PartitionStateNode, topic, partition)
        except ZnodeFormatError:
            return None
        if got is None or got[0] != state:
            return None
        return int(got[1].version)

    async def create_isr_change_notification(self, partitions: Iterable[tuple[str, int]]) -> str:
        """A leader's batch of ISR changes for the controller (``propagateIsrChanges``): one
        persistent-sequential ``/isr_change_notification/isr_change_<seq>`` naming the
        partitions (JSON v1, §1.9); returns its path. ``/isr_change_notification`` must exist
        (``create_top_level_paths``), as in Kafka, which creates no parent here."""
        value = frozenset(TopicPartition(t, p) for t, p in partitions)
        return await self.create(
            IsrChangeNotificationNode.create_path(),
            IsrChangeNotificationNode.encode(value, _RELEASE_INDEPENDENT),
            sequence=True,
        )

    async def _controller_id(self) -> tuple[int | None, Any]:
        """(broker id named by /controller or None, stat or None)."""
        got = await self.get(ControllerNode.path())
        if got is None:
            return None, None
        data, stat = got
        try:
            return ControllerNode.decode(data).broker_id, stat
        except ZnodeFormatError:
            return None, stat

    async def _read_or_create_controller_epoch(self) -> tuple[int, int]:
        path = ControllerEpochNode.path()
        got = await self.read(ControllerEpochNode)
        if got is None:
            with contextlib.suppress(NodeExistsError):
                await self.create(
                    path, ControllerEpochNode.encode(INITIAL_CONTROLLER_EPOCH, _RELEASE_INDEPENDENT)
                )
            got = await self.read(ControllerEpochNode)
            if got is None:
                raise NoNodeError(f"{path} vanished right after creation", op="get", path=path)
        epoch, stat = got
        return epoch, int(stat.version)

    async def elect_controller(self, broker_id: int, release: Release) -> ElectionResult:
        """One election attempt, the atomic ZooKeeper part of Kafka's ``elect()``
        (docs/kafka-behaviour.md §10.1 steps 2-4):

        1. ``/controller`` names a broker: lost, unless it names ``broker_id`` *and* is owned by
           this session (this process already is the controller: won, current epoch).
        2. Read ``/controller_epoch`` (create it as ``0`` if absent) with its data version V.
        3. multi(create ``/controller`` EPHEMERAL, set ``/controller_epoch`` = epoch+1 at V).
        4. On NodeExists/BadVersion re-read: won only if ``/controller`` names ``broker_id`` and
           the epoch is epoch+1.

        Watching ``/controller`` and retrying on its deletion is the caller's loop.
        """
        current, stat = await self._controller_id()
        if current is not None:
            epoch, version = await self._read_or_create_controller_epoch()
            ours = current == broker_id and stat.ephemeralOwner == self.session_id
            return ElectionResult(ours, current, epoch, version)
        epoch, version = await self._read_or_create_controller_epoch()
        new_epoch = epoch + 1
        info = ControllerInfo(broker_id, time.time_ns() // 1_000_000)
        tx = (
            self.transaction()
            .create(ControllerNode.path(), ControllerNode.encode(info, release), ephemeral=True)
            .set(
                ControllerEpochNode.path(),
                ControllerEpochNode.encode(new_epoch, release),
                version,
            )
        )
        try:
            _created, epoch_stat = await tx.commit()
            return ElectionResult(True, broker_id, new_epoch, int(epoch_stat.version))
        except (NodeExistsError, BadVersionError):
            pass
        current, _ = await self._controller_id()
        got = await self.read(ControllerEpochNode)
        now_epoch, now_version = (got[0], int(got[1].version)) if got else (epoch, version)
        won = current == broker_id and now_epoch == new_epoch
        return ElectionResult(won, current, now_epoch, now_version)
