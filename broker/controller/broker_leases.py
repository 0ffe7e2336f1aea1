"""KIP-631 broker leases: BrokerRegistration and BrokerHeartbeat turned into `/brokers/ids`.

A registration becomes `/brokers/ids/<id>` in the emulated release's format (broker epoch = its
czxid), deleted when no heartbeat came within `--broker-session-timeout-ms`, so the controller
handles the broker like a lost ZooKeeper-mode one. Errors follow 3.9's `ClusterControlManager`
(README "Joining as a broker over the protocol"; docs/kafka-behaviour.md §9). Methods run as
events of one `Controller` incarnation, every write fenced. The node is persistent (an
ephemeral one would die with the controller's session) and paired with `/zkbroker/leases/<id>`
from the same multi (same czxid): a new controller resumes each intact pair with a full session
timeout and deletes stray lease nodes. Re-registering with the same incarnation id keeps the
node, hence the epoch (Kafka hands out a new one).

Not emulated: fencing as a state (WantFence only sets IsFenced), metadata catch-up (IsCaughtUp
is always true), moving leaders before a WantShutDown, log directories, `previous_broker_epoch`,
checking features against `/feature`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import error_codes
from zkbroker.zk_layout import BrokerIdNode, BrokerInfo, Endpoint
from zkbroker.zk_layout.errors import NoNodeError
from zkbroker.zk_layout.nodes.brokers import SECURITY_PROTOCOLS
from zkbroker.zk_layout.nodes.zkbroker import BrokerLease, BrokerLeaseNode, BrokerLeasesNode

if TYPE_CHECKING:
    from zkbroker.broker.controller.controller import Controller
    from zkbroker.broker.protocol.messages.broker_registration import BrokerRegistrationRequest

# Kafka's SecurityProtocol ids, as BrokerRegistration's listeners carry them: 0-3 in the
# order of SECURITY_PROTOCOLS (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL).
SECURITY_PROTOCOL_IDS = dict(enumerate(SECURITY_PROTOCOLS))


@dataclass
class _Lease:
    incarnation_id: str
    broker_epoch: int
    deadline: float
    timer: asyncio.TimerHandle | None = None


@dataclass(frozen=True)
class HeartbeatReply:
    error_code: int
    is_fenced: bool = True
    should_shut_down: bool = False


def invalid_registration_code(release: tuple[int, ...]) -> int:
    """INVALID_REGISTRATION from 3.7 on (where Kafka has it), INVALID_REQUEST before."""
    return error_codes.INVALID_REGISTRATION if release >= (3, 7) else error_codes.INVALID_REQUEST


def endpoints_of(request: BrokerRegistrationRequest) -> tuple[Endpoint, ...] | None:
    """The request's listeners as endpoints, or None when they are not a valid set: none at
    all, a listener without a name, host or port, an unknown security protocol, or a name
    given twice."""
    endpoints: list[Endpoint] = []
    for listener in request.listeners:
        protocol = SECURITY_PROTOCOL_IDS.get(listener.security_protocol)
        if not listener.name or not listener.host or listener.port <= 0 or protocol is None:
            return None
        endpoints.append(Endpoint(listener.name.upper(), listener.host, listener.port, protocol))
    if not endpoints or len({e.listener for e in endpoints}) != len(endpoints):
        return None
    return tuple(endpoints)


class BrokerLeases:
    """The leases one controller incarnation holds; methods run as controller events."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self._leases: dict[int, _Lease] = {}
        self._log = get_logger(__name__).bind(
            broker_id=controller.context.broker_id, controller_epoch=controller.context.epoch
        )

    @property
    def _timeout_s(self) -> float:
        return self.controller.settings.broker_session_timeout_ms / 1000

    def stop(self) -> None:
        """Forget the timers; the nodes stay for the next controller to resume."""
        for lease in self._leases.values():
            if lease.timer is not None:
                lease.timer.cancel()
        self._leases.clear()

    # ---- events --------------------------------------------------------------------------

    async def resume(self) -> None:
        """Take over the leases a previous controller left (each gets a full timeout)."""
        store = self.controller.store
        children = await store.get_children(BrokerLeasesNode.path()) or []
        ids = [b for b in (BrokerIdNode.broker_id_from_child(c) for c in children) if b is not None]
        if not ids:
            return
        leases, nodes = await self.controller.gather(
            store.get_many([BrokerLeaseNode.path(b) for b in ids]),
            store.get_many([BrokerIdNode.path(b) for b in ids]),
        )
        for broker_id, lease_node, broker_node in zip(ids, leases, nodes, strict=True):
            if lease_node is None:
                continue
            data, stat = lease_node
            try:
                lease = BrokerLeaseNode.decode(data)
            except Exception:
                lease = None
            if lease is None or broker_node is None or broker_node[1].czxid != stat.czxid:
                # The pair does not match: the lease is not of this registration.
                tx = store.fenced(self.controller.context.epoch_zk_version)
                tx.delete(BrokerLeaseNode.path(broker_id), stat.version)
                with contextlib.suppress(NoNodeError):
                    await tx.commit()
                continue
            self._start(broker_id, lease.incarnation_id, int(stat.czxid))
            self._log.info("broker_lease.resumed", lease_broker_id=broker_id)

    async def register(self, request: BrokerRegistrationRequest) -> tuple[int, int]:
        """BrokerRegistration on the controller: (error code, broker epoch)."""
        controller = self.controller
        endpoints = endpoints_of(request)
        if endpoints is None:
            return invalid_registration_code(controller.release), -1
        broker_id = request.broker_id
        incarnation = str(request.incarnation_id)
        rack = request.rack or None
        info = BrokerInfo.create(
            broker_id,
            endpoints,
            rack=rack,
            features={
                f.name: {
                    "min_version": f.min_supported_version,
                    "max_version": f.max_supported_version,
                }
                for f in request.features
            },
        )
        data = BrokerIdNode.encode(info, controller.release)
        path = BrokerIdNode.path(broker_id)
        store = controller.store
        existing = await store.get(path)
        lease = self._leases.get(broker_id)
        if existing is not None:
            if lease is None or lease.broker_epoch != existing[1].czxid:
                # Held by a ZooKeeper-mode broker (or a registration this controller did not
                # make): a live broker of another incarnation.
                return error_codes.DUPLICATE_BROKER_REGISTRATION, -1
            if lease.incarnation_id != incarnation:
                return error_codes.DUPLICATE_BROKER_REGISTRATION, -1
            await controller.fenced_set(path, data, -1)
            self._start(broker_id, incarnation, lease.broker_epoch)
            self._log.info("broker_lease.refreshed", lease_broker_id=broker_id)
            return error_codes.NONE, lease.broker_epoch
        self._drop(broker_id)
        await store.ensure_path(BrokerLeasesNode.path())
        lease_path = BrokerLeaseNode.path(broker_id)
        stray = await store.exists(lease_path)
        tx = store.fenced(controller.context.epoch_zk_version)
        if stray is not None:
            tx.delete(lease_path)
        # Kafka's checkedEphemeralCreate shape (create null, then set): data version 1.
        tx.create(path, None).set(path, data, 0)
        tx.create(lease_path, BrokerLeaseNode.encode(BrokerLease(incarnation), controller.release))
        results = await tx.commit()
        epoch = int(results[-2].czxid)
        self._start(broker_id, incarnation, epoch)
        self._log.info(
            "broker_lease.registered",
            lease_broker_id=broker_id,
            broker_epoch=epoch,
            endpoints=[e.connection_string() for e in endpoints],
        )
        return error_codes.NONE, epoch

    async def heartbeat(
        self, broker_id: int, broker_epoch: int, want_fence: bool, want_shut_down: bool
    ) -> HeartbeatReply:
        lease = self._leases.get(broker_id)
        if lease is None or lease.broker_epoch != broker_epoch:
            return HeartbeatReply(error_codes.STALE_BROKER_EPOCH)
        if want_shut_down:
            self._log.info("broker_lease.shut_down", lease_broker_id=broker_id)
            await self._remove(broker_id, lease)
            return HeartbeatReply(error_codes.NONE, is_fenced=want_fence, should_shut_down=True)
        self._start(broker_id, lease.incarnation_id, lease.broker_epoch)
        return HeartbeatReply(error_codes.NONE, is_fenced=want_fence)

    async def _expire(self, broker_id: int, broker_epoch: int) -> None:
        lease = self._leases.get(broker_id)
        if lease is None or lease.broker_epoch != broker_epoch:
            return
        if lease.deadline > time.monotonic():
            self._arm(broker_id, lease)  # a heartbeat came in meanwhile
            return
        self._log.info("broker_lease.expired", lease_broker_id=broker_id)
        await self._remove(broker_id, lease)

    # ---- helpers -------------------------------------------------------------------------

    async def _remove(self, broker_id: int, lease: _Lease) -> None:
        """Delete the registration and its lease node (one fenced multi)."""
        self._drop(broker_id)
        controller = self.controller
        store = controller.store
        path = BrokerIdNode.path(broker_id)
        lease_path = BrokerLeaseNode.path(broker_id)
        node, lease_node = await controller.gather(store.exists(path), store.exists(lease_path))
        tx = store.fenced(controller.context.epoch_zk_version)
        if node is not None and node.czxid == lease.broker_epoch:
            tx.delete(path, node.version)
        if lease_node is not None:
            tx.delete(lease_path)
        if len(tx):
            await tx.commit()

    def _start(self, broker_id: int, incarnation_id: str, broker_epoch: int) -> None:
        lease = self._leases.get(broker_id)
        deadline = time.monotonic() + self._timeout_s
        if lease is None or lease.broker_epoch != broker_epoch:
            self._drop(broker_id)
            lease = _Lease(incarnation_id, broker_epoch, deadline)
            self._leases[broker_id] = lease
            self._arm(broker_id, lease)
        else:
            lease.incarnation_id = incarnation_id
            lease.deadline = deadline  # the armed timer re-arms itself if it fires early

    def _arm(self, broker_id: int, lease: _Lease) -> None:
        epoch = lease.broker_epoch

        def fire() -> None:
            lease.timer = None
            self.controller.submit(
                "BrokerLeaseExpired", lambda c: c.leases._expire(broker_id, epoch)
            )

        delay = max(0.0, lease.deadline - time.monotonic())
        lease.timer = asyncio.get_running_loop().call_later(delay, fire)

    def _drop(self, broker_id: int) -> None:
        lease = self._leases.pop(broker_id, None)
        if lease is not None and lease.timer is not None:
            lease.timer.cancel()
