"""Persistent, level-triggered watches (what Kafka's ZNodeChangeHandlers and
ZNodeChildChangeHandlers rely on, over ZooKeeper's one-shot watches): after every ZooKeeper event
the node is re-read with the watch re-registered in the same request, and the callback runs on the
event loop with the *current* state, skipping reads that show no change. They survive the node's
deletion and re-creation, connection loss (re-armed on CONNECTED) and session expiry (re-armed on
the new session), so several changes may collapse into one call: a callback re-reads or diffs,
never counts calls. New watches are armed together, a slice per loop iteration (``WatchSet``).

Deliberately not here: ZooKeeper 3.6's server-side ``addWatch`` (these are one-shot watches,
re-armed), what a callback does with the state, refusing watches on a closed store (``client``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from kazoo import exceptions as kazoo_exc
from kazoo.protocol.paths import _prefix_root
from kazoo.protocol.serialization import Exists, GetChildren2, GetData
from kazoo.protocol.states import EventType, KazooState

from zkbroker.zk_layout.store.kazoo_bridge import DRAIN_SLICE_S, READ_WINDOW, KazooBridge
from zkbroker.zk_layout.store.kazoo_errors import translate

log = logging.getLogger(__name__)

# A callback returning ``False`` (exactly) cancels its watch, as with kazoo's recipes; any other
# return value, None included, keeps it.
ChildrenCallback = Callable[[list[str] | None], object]
DataCallback = Callable[[bytes | None, Any], object]
ExistsCallback = Callable[[Any], object]


class WatchSet:
    """The live watches of one session, and the batched arming of new ones."""

    def __init__(self, bridge: KazooBridge) -> None:
        self.bridge = bridge
        self._live: set[Watch] = set()
        self._arm_queue: list[Watch] = []
        self._arm_scheduled = False

    def add(self, watch: Watch) -> None:
        self._live.add(watch)

    def discard(self, watch: Watch) -> None:
        self._live.discard(watch)

    def __iter__(self) -> Iterator[Watch]:
        return iter(self._live)

    def arm_batched(self, watch: Watch) -> None:
        """Arm a new watch with the others started in the same loop iteration, in one
        `submit`: creating 10,000 topics starts tens of thousands of watches, and one
        wake-up of kazoo's thread each (a GIL hand-off) stalled the loop for seconds."""
        self._arm_queue.append(watch)
        if not self._arm_scheduled:
            self._arm_scheduled = True
            self.bridge.loop.call_soon(self._flush_arms)

    def _flush_arms(self) -> None:
        self._arm_scheduled = False
        watches, self._arm_queue = self._arm_queue, []
        handler = self.bridge.client.handler
        batch: list[tuple[Any, Any]] = []
        # A slice of work per loop iteration, as the bridge's drain does: the watches left
        # over go first in the next flush, ahead of any started later.
        deadline = time.perf_counter() + DRAIN_SLICE_S
        for index, watch in enumerate(watches):
            if index % 64 == 63 and time.perf_counter() >= deadline:
                self._arm_queue = watches[index:] + self._arm_queue
                if not self._arm_scheduled:
                    self._arm_scheduled = True
                    self.bridge.loop.call_soon(self._flush_arms)
                break
            if watch.cancelled:
                continue
            request, on_done = watch._request()
            result = handler.async_result()
            result.rawlink(on_done)
            batch.append((request, result))
        for start in range(0, len(batch), READ_WINDOW):
            self.bridge.submit(batch[start : start + READ_WINDOW])


class Watch:
    """Handle of a persistent watch; ``cancel()`` stops callbacks (idempotent)."""

    def __init__(self, watches: WatchSet, path: str, kind: str) -> None:
        self._watches = watches
        self._bridge = watches.bridge
        self.path = path
        self.kind = kind
        self._lock = threading.Lock()
        self._cancelled = False
        self._has_token = False
        self._token: Any = None
        self._first: asyncio.Future[None] = watches.bridge.loop.create_future()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
        self._bridge.client.remove_listener(self._on_state)
        self._watches.discard(self)
        if not self._first.done():
            # Whoever awaits the first delivery gets a (cancelled) handle, not a CancelledError
            # that would look like their own task being cancelled.
            self._first.set_result(None)

    # --- kazoo side (completion / connection threads) --------------------------------------

    def _start(self) -> None:
        self._bridge.client.add_listener(self._on_state)
        self._arm()

    def _primed(self, token: Any) -> None:
        """Armed by a read made elsewhere (``get_many_and_watch``) that returned `token`'s
        version: that version counts as delivered."""
        with self._lock:
            self._has_token = True
            self._token = token
        self._bridge.client.add_listener(self._on_state)
        if not self._first.done():
            self._first.set_result(None)

    def _on_state(self, state: str) -> None:
        # kazoo clears its client-side watchers when the connection drops, and a new session
        # has none: re-read and re-register after every (re)connection.
        if state == KazooState.CONNECTED:
            self._arm()

    def _on_event(self, event: Any) -> None:
        # EventType.NONE is kazoo's "watchers reset because the connection dropped" signal;
        # _on_state re-arms once reconnected.
        if event.type != EventType.NONE:
            self._arm()

    def _arm(self) -> None:
        raise NotImplementedError

    def _request(self) -> tuple[Any, Callable[[Any], None]]:
        """The kazoo request that arms this watch and the callback of its result (what
        `_arm` sends), for `WatchSet.arm_batched`."""
        raise NotImplementedError

    def _offer(self, token: Any, payload: tuple[Any, ...]) -> None:
        """Deliver ``payload`` unless ``token`` equals the last delivered one."""
        with self._lock:
            if self._cancelled or (self._has_token and token == self._token):
                return
            self._has_token = True
            self._token = token
        self._bridge.call_on_loop(self._dispatch, payload)

    def _failed(self, exc: BaseException) -> None:
        if isinstance(exc, kazoo_exc.ConnectionClosedError):
            return  # store closing
        if isinstance(exc, kazoo_exc.ConnectionLoss | kazoo_exc.SessionExpiredError):
            return  # re-armed by _on_state once connected again
        log.warning("watch on %s (%s) failed: %r", self.path, self.kind, exc)
        self._bridge.call_on_loop(self._fail_first, (exc,))

    # --- loop side --------------------------------------------------------------------------

    def _fail_first(self, exc: BaseException) -> None:
        if not self._first.done():
            self._first.set_exception(translate(exc, f"watch {self.kind}", self.path))

    def _dispatch(self, *payload: Any) -> None:
        if self._cancelled:
            return
        try:
            keep = self._deliver(*payload)
        except Exception:
            log.exception("callback of %s watch on %s raised", self.kind, self.path)
            keep = None
        if not self._first.done():
            self._first.set_result(None)
        if keep is False:
            self.cancel()

    def _deliver(self, *payload: Any) -> Any:
        raise NotImplementedError

    # What a read-and-watch of a node that does not exist delivers (children and data watches).
    _ABSENT: tuple[Any, ...] = (None,)

    def _on_read_failed(self, exception: BaseException) -> None:
        """A children or data read failed: a missing node is watched for its creation."""
        if isinstance(exception, kazoo_exc.NoNodeError):
            self._bridge.client.exists_async(self.path, watch=self._on_event).rawlink(
                self._on_missing_node_exists
            )
        else:
            self._failed(exception)

    def _on_missing_node_exists(self, result: Any) -> None:
        if not result.successful():
            self._failed(result.exception)
        elif result.value is None:
            self._offer(None, self._ABSENT)
        else:
            self._arm()  # created between our two reads


class ChildrenWatch(Watch):
    def __init__(self, watches: WatchSet, path: str, callback: ChildrenCallback) -> None:
        super().__init__(watches, path, "children")
        self._callback = callback

    def _arm(self) -> None:
        if self._cancelled:
            return
        client = self._bridge.client
        client.get_children_async(self.path, watch=self._on_event, include_data=True).rawlink(
            self._on_children
        )

    def _request(self) -> tuple[Any, Callable[[Any], None]]:
        full = _prefix_root(self._bridge.client.chroot, self.path)
        return GetChildren2(full, self._on_event), self._on_children

    def _on_children(self, result: Any) -> None:
        if result.successful():
            children, stat = result.value
            # pzxid moves with every child create/delete, czxid with re-creation of the node.
            self._offer((stat.czxid, stat.pzxid), (list(children),))
        else:
            self._on_read_failed(result.exception)

    def _deliver(self, *payload: Any) -> Any:
        return self._callback(payload[0])


class DataWatch(Watch):
    _ABSENT = (None, None)

    def __init__(self, watches: WatchSet, path: str, callback: DataCallback) -> None:
        super().__init__(watches, path, "data")
        self._callback = callback

    def _arm(self) -> None:
        if self._cancelled:
            return
        self._bridge.client.get_async(self.path, watch=self._on_event).rawlink(self._on_data)

    def _request(self) -> tuple[Any, Callable[[Any], None]]:
        full = _prefix_root(self._bridge.client.chroot, self.path)
        return GetData(full, self._on_event), self._on_data

    def _on_data(self, result: Any) -> None:
        if result.successful():
            data, stat = result.value
            self._offer((stat.czxid, stat.mzxid), (data or b"", stat))
        else:
            self._on_read_failed(result.exception)

    def _deliver(self, *payload: Any) -> Any:
        return self._callback(payload[0], payload[1])


class ExistsWatch(Watch):
    def __init__(self, watches: WatchSet, path: str, callback: ExistsCallback) -> None:
        super().__init__(watches, path, "exists")
        self._callback = callback

    def _arm(self) -> None:
        if self._cancelled:
            return
        self._bridge.client.exists_async(self.path, watch=self._on_event).rawlink(self._on_exists)

    def _request(self) -> tuple[Any, Callable[[Any], None]]:
        full = _prefix_root(self._bridge.client.chroot, self.path)
        return Exists(full, self._on_event), self._on_exists

    def _on_exists(self, result: Any) -> None:
        if not result.successful():
            self._failed(result.exception)
            return
        stat = result.value
        self._offer(None if stat is None else (stat.czxid, stat.mzxid), (stat,))

    def _deliver(self, *payload: Any) -> Any:
        return self._callback(payload[0])
