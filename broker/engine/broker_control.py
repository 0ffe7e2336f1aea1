"""Stopping and starting single brokers of a running cluster, in-process and across processes.

The desired state of broker `<id>` is zkbroker's own znode `/zkbroker/brokers/<id>`
(`zkbroker.zk_layout.nodes.zkbroker`); whether it is up is `/brokers/ids/<id>`.
`BrokerControl` (one per `Cluster`) resets its brokers' nodes to "running" at start (a stale
"stopped" must not stop a fresh cluster), holds their `owner` markers, watches the nodes and
applies any change (`BrokerNode.stop()`/`start()`); `request()` writes first, then applies.
Only a state newer by mzxid than the newest known is applied, so the latest write wins however
watch deliveries interleave. `request_broker_state` and `list_brokers` serve the `zkbroker
broker` command: short sessions that write or read the nodes and wait, never starting anything.

Not here: what stopping or starting involves (`zkbroker.broker.server.broker_node`), retrying a
failed start (write the state again), any notion of who runs an id beyond the owner markers.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from zkbroker.broker.asyncutil import cancel_and_wait, wait_for
from zkbroker.broker.log import get_logger
from zkbroker.broker.server.broker_node import BrokerNode
from zkbroker.zk_layout import (
    BrokerControlNode,
    BrokerIdNode,
    BrokerIdsNode,
    BrokerOwnerNode,
    BrokerState,
    NodeExistsError,
    NoNodeError,
    Watch,
    ZkbrokerBrokersNode,
    ZkStore,
    ZnodeFormatError,
    ZnodeStat,
)
from zkbroker.zk_layout.nodes.zkbroker import ANY_RELEASE
from zkbroker.zk_layout.store import SessionState

Source = Literal["api", "zookeeper"]


async def write_desired_state(store: ZkStore, broker_id: int, state: BrokerState) -> Any:
    """Write `state` into `/zkbroker/brokers/<broker_id>` (created, parents too, if missing)
    and return the node's new stat: its mzxid orders this write against every other one."""
    path = BrokerControlNode.path(broker_id)
    data = BrokerControlNode.encode(state, ANY_RELEASE)
    try:
        return await store.set(path, data)
    except NoNodeError:
        pass
    await store.ensure_path(ZkbrokerBrokersNode.path())
    try:
        # create + set in one multi: one zxid, and the stat of exactly this write.
        _path, stat = await store.transaction().create(path, data).set(path, data).commit()
        return stat
    except NodeExistsError:  # someone created it in between: ours is simply the next write
        return await store.set(path, data)


class BrokerControl:
    """Applies the control nodes of the brokers one `Cluster` runs."""

    def __init__(self, store: ZkStore, brokers: Mapping[int, BrokerNode], zookeeper: str) -> None:
        self._store = store
        self._brokers = brokers
        self._zookeeper = zookeeper
        # mzxid of the newest desired state known per broker, and that state.
        self._seen: dict[int, int] = {}
        self._desired: dict[int, BrokerState] = {}
        # One lock for every stop/start of this process: applies never overlap, so a
        # broker is never started and stopped at the same time.
        self._lock = asyncio.Lock()
        self._watches: list[Watch] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._remove_session_listener: Any = None
        self._stopped = False
        self._log = get_logger(__name__)

    async def start(self) -> None:
        """Reset the control nodes to running, mark ownership, then watch (in that order, so
        the watches' first delivery is this very reset, or a newer write that must apply).
        The brokers' nodes are independent: each step runs for all of them at once."""
        ids = sorted(self._brokers)
        await self._store.ensure_path(ZkbrokerBrokersNode.path())
        stats = await asyncio.gather(
            *(write_desired_state(self._store, b, BrokerState.RUNNING) for b in ids)
        )
        for broker_id, stat in zip(ids, stats, strict=True):
            self._note(broker_id, stat, BrokerState.RUNNING)
        await self._claim_ownership()
        self._remove_session_listener = self._store.add_session_listener(self._on_session)
        self._watches.extend(
            await asyncio.gather(
                *(
                    self._store.watch_data(
                        BrokerControlNode.path(b), functools.partial(self._on_control_node, b)
                    )
                    for b in ids
                )
            )
        )

    async def stop(self) -> None:
        """Stop reacting (before the cluster stops its brokers, so nothing restarts one)."""
        self._stopped = True
        for watch in self._watches:
            watch.cancel()
        self._watches.clear()
        if self._remove_session_listener is not None:
            self._remove_session_listener()
            self._remove_session_listener = None
        await cancel_and_wait(list(self._tasks), what="broker_control", log=self._log)
        # Give up ownership at once: a `zkbroker broker start` from now on must time out
        # rather than wait on a process that is shutting down.
        for broker_id in self._brokers:
            with contextlib.suppress(Exception):
                await self._store.delete(BrokerOwnerNode.path(broker_id))

    async def request(self, broker_id: int, state: BrokerState) -> None:
        """Record `state` as broker_id's desired state, then apply it (the in-process path).

        What is applied is the newest desired state known once the lock is ours: this one,
        unless somebody wrote a newer one meanwhile (then theirs wins, as it would anyway)."""
        stat = await write_desired_state(self._store, broker_id, state)
        self._note(broker_id, stat, state)
        async with self._lock:
            await self._apply_locked(broker_id, self._desired[broker_id], "api")

    # ---- applying ----------------------------------------------------------------------

    def _note(self, broker_id: int, stat: Any, state: BrokerState) -> bool:
        """Remember a desired state unless one at least as new (by mzxid) is known already."""
        if stat.mzxid <= self._seen.get(broker_id, -1):
            return False
        self._seen[broker_id] = stat.mzxid
        self._desired[broker_id] = state
        return True

    def _on_control_node(self, broker_id: int, data: bytes | None, stat: ZnodeStat | None) -> None:
        # Deleting a control node expresses no wish: the broker stays as it is.
        if self._stopped or data is None or stat is None:
            return
        try:
            state = BrokerControlNode.decode_at(data, broker_id)
        except ZnodeFormatError as e:
            self._log.warning("broker.control_invalid", broker_id=broker_id, reason=str(e))
            return
        if not self._note(broker_id, stat, state):
            return  # this process's own write, or older than what it applied since
        self._spawn(self._apply_desired(broker_id))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` in the background; `stop()` cancels it."""
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _apply_desired(self, broker_id: int) -> None:
        # Apply the newest desired state at the time the lock is ours, not the one that
        # scheduled this task: deliveries may have collapsed or overtaken each other.
        try:
            async with self._lock:
                state = self._desired[broker_id]
                await self._apply_locked(broker_id, state, "zookeeper")
        except asyncio.CancelledError:
            raise
        except Exception:
            self._log.exception("broker.control_failed", broker_id=broker_id)

    async def _apply_locked(self, broker_id: int, state: BrokerState, source: Source) -> None:
        broker = self._brokers[broker_id]
        if state is BrokerState.STOPPED and broker.running:
            await broker.stop()
        elif state is BrokerState.RUNNING and not broker.running:
            await broker.start(self._zookeeper)
        else:
            return  # already so: stopping a stopped broker, starting a running one
        self._log.info(
            "broker.control_applied", broker_id=broker_id, state=state.value, source=source
        )

    # ---- ownership markers ---------------------------------------------------------------

    async def _claim_ownership(self) -> None:
        await asyncio.gather(*(self._claim(b) for b in sorted(self._brokers)))

    async def _claim(self, broker_id: int) -> None:
        path = BrokerOwnerNode.path(broker_id)
        try:
            await self._store.create(path, None, ephemeral=True)
        except NodeExistsError:
            stat = await self._store.exists(path)
            if stat is not None and stat.ephemeralOwner == self._store.session_id:
                return  # ours already (a retry after a connection blip)
            # Another process configured with the same id (holding it stopped): both
            # apply the control node; whichever registers first owns the id.
            self._log.warning("broker.control_owner_exists", broker_id=broker_id)

    def _on_session(self, state: SessionState) -> None:
        # Ephemeral markers die with an expired session; watches re-arm by themselves.
        if state is SessionState.RECONNECTED_NEW_SESSION and not self._stopped:
            self._spawn(self._reclaim())

    async def _reclaim(self) -> None:
        try:
            await self._claim_ownership()
        except Exception:
            self._log.exception("broker.control_reclaim_failed")


# ---- the client side: `zkbroker broker ...` ------------------------------------------------


@dataclass(frozen=True)
class BrokerStatus:
    """One line of `zkbroker broker list`."""

    broker_id: int
    registered: bool
    # None: no control node; "invalid": a control node that does not decode.
    desired: BrokerState | Literal["invalid"] | None
    owned: bool


async def request_broker_state(
    store: ZkStore, broker_id: int, state: BrokerState, timeout: float
) -> bool:
    """Write the desired state, then wait until a zkbroker process runs broker_id (its owner
    marker exists) and `/brokers/ids/<id>` is absent (stopped) or present (running). False
    when that did not happen within `timeout` seconds."""
    done = asyncio.Event()
    present: dict[str, bool] = {}
    registration = BrokerIdNode.path(broker_id)
    owner = BrokerOwnerNode.path(broker_id)

    def check() -> None:
        # Both watches have reported; a zkbroker process runs the id; the registration is
        # as the requested state has it.
        if (
            len(present) == 2
            and present[owner]
            and present[registration] == (state is BrokerState.RUNNING)
        ):
            done.set()

    def watcher(path: str) -> Any:
        def on_change(stat: Any) -> None:
            present[path] = stat is not None
            check()

        return on_change

    await write_desired_state(store, broker_id, state)
    watches = [await store.watch_exists(p, watcher(p)) for p in (owner, registration)]
    try:
        await wait_for(done.wait(), timeout)
        return True
    except TimeoutError:
        return False
    finally:
        for w in watches:
            w.cancel()


async def list_brokers(store: ZkStore) -> list[BrokerStatus]:
    """Every broker id registered in `/brokers/ids` or named under `/zkbroker/brokers`."""
    registered = await _child_ids(store, BrokerIdsNode.path())
    controlled = await _child_ids(store, ZkbrokerBrokersNode.path())
    out: list[BrokerStatus] = []
    for broker_id in sorted(registered | controlled):
        desired: BrokerState | Literal["invalid"] | None = None
        owned = False
        if broker_id in controlled:
            try:
                got = await store.read(BrokerControlNode, broker_id)
                desired = got[0] if got else None
            except ZnodeFormatError:
                desired = "invalid"
            owned = await store.exists(BrokerOwnerNode.path(broker_id)) is not None
        out.append(BrokerStatus(broker_id, broker_id in registered, desired, owned))
    return out


async def _child_ids(store: ZkStore, path: str) -> set[int]:
    """The children of `path` that are broker ids (read as Kafka reads `/brokers/ids`)."""
    ids = (BrokerIdNode.broker_id_from_child(c) for c in await store.get_children(path) or [])
    return {i for i in ids if i is not None}
