"""Kafka's ``ZkNodeChangeNotificationListener``: follows a folder of sequential notification
znodes (``/config/changes``, the two ACL change folders, ``/delegation_token/token_changes``)
and hands each new one to its user, in sequence order (docs/kafka-behaviour.md §10.7).

A children watch (re-read after reconnecting and on a new session) wakes ONE worker running
passes one at a time. A pass reads the notifications above the last processed (-1 at first, so
all present at ``start()`` are replayed), calls ``handle(path, data)`` for each in order and then
``flush(names)`` once with what they named, each once. A failure is passed over with
``skip_failed``, else it stops the pass and the rest is read again at the next change. ``Purge``
says when old notifications (ctime older than ``change_expiration_ms``, by the wall clock) are
deleted; a concurrent delete is fine.

Not here: what a notification means (``handle`` decodes it with its znode class), writing them.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import time
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Final, Protocol

from zkbroker.zk_layout.errors import NoNodeError
from zkbroker.zk_layout.store.client import ZkClient
from zkbroker.zk_layout.store.watches import Watch

#: Kafka's ZkNodeChangeNotificationListener changeExpirationMs default.
CHANGE_EXPIRATION_MS: Final = 15 * 60 * 1000


class EventLog(Protocol):
    """What the listener logs with: the user's structlog logger, so the events keep its name
    and bound fields."""

    def info(self, event: str, **fields: Any) -> Any: ...

    def warning(self, event: str, **fields: Any) -> Any: ...

    def error(self, event: str, **fields: Any) -> Any: ...

    def exception(self, event: str, **fields: Any) -> Any: ...


class NotificationNode(Protocol):
    """A znode class of sequential notifications (``zkbroker.zk_layout.nodes``' sequence
    nodes): the folder and the child-name prefix."""

    PARENT: ClassVar[str]
    PREFIX: ClassVar[str]


class Purge(enum.Enum):
    """Which notifications a listener deletes."""

    #: After each pass, every notification read so far whose ctime is older than the
    #: expiration (Kafka's purgeObsoleteNotifications); ``purged_event`` logs the count.
    AFTER_PASS = "after_pass"
    #: A notification already older than the expiration when it is processed, right after
    #: its handler succeeded.
    WHEN_PROCESSED = "when_processed"


#: How long `stop` waits for its cancelled worker.
STOP_WAIT_S: Final = 5.0


def _wall_clock_ms() -> float:
    return time.time() * 1000


class ChangeNotificationListener:
    """One follower of one notification folder; ``start()`` / ``stop()`` on the event loop."""

    def __init__(
        self,
        store: ZkClient,
        path: str,
        prefix: str,
        handle: Callable[[str, bytes], Awaitable[str | None]],
        *,
        log: EventLog,
        failed_event: str,
        skip_failed: bool = False,
        flush: Callable[[list[str]], Awaitable[None]] | None = None,
        purge: Purge = Purge.AFTER_PASS,
        change_expiration_ms: int = CHANGE_EXPIRATION_MS,
        purged_event: str | None = None,
    ) -> None:
        self.store = store
        self.path = path
        self.prefix = prefix
        self._handle = handle
        self._flush = flush
        self._log = log
        self._failed_event = failed_event
        self._skip_failed = skip_failed
        self._purge = purge
        self.change_expiration_ms = change_expiration_ms
        self._purged_event = purged_event
        self.last_executed = -1
        self._children: list[str] = []
        self._wake = asyncio.Event()
        self._watch: Watch | None = None
        self._worker: asyncio.Task[None] | None = None
        # ctime (ms) of each notification read (Purge.AFTER_PASS), to purge without re-reading.
        self._ctimes: dict[str, int] = {}

    @classmethod
    def of(
        cls,
        store: ZkClient,
        node: type[NotificationNode],
        handle: Callable[[str, bytes], Awaitable[str | None]],
        **options: Any,
    ) -> ChangeNotificationListener:
        """The listener of ``node``'s folder and prefix (the keyword options as ``__init__``)."""
        return cls(store, node.PARENT, node.PREFIX, handle, **options)

    def sequence_number(self, child: str) -> int | None:
        """The counter of a ``<prefix><counter>`` child name; None for any other name."""
        suffix = child[len(self.prefix) :]
        if not (child.startswith(self.prefix) and suffix.lstrip("-").isdigit()):
            return None
        return int(suffix)

    async def start(self) -> None:
        """The worker, then the watch (whose first delivery, before this returns, wakes it)."""
        self._worker = asyncio.get_running_loop().create_task(
            self._run(), name=f"change-notifications:{self.path}"
        )
        self._watch = await self.store.watch_children(self.path, self._on_children)

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        worker = self._worker
        if worker is not None:
            worker.cancel()
            # Bounded, and only the caller's own cancellation is raised here (asyncio.wait
            # never raises the awaited task's): a worker that swallowed its cancellation must
            # not hold the stop of the broker forever.
            done, _ = await asyncio.wait([worker], timeout=STOP_WAIT_S)
            if done:
                if not worker.cancelled():
                    worker.exception()  # its failure was logged by the worker; retrieved here
            else:
                self._log.warning(
                    "change_notifications.worker_did_not_end", path=self.path, seconds=STOP_WAIT_S
                )
            self._worker = None

    # ---- internals ---------------------------------------------------------------------

    def _on_children(self, children: list[str] | None) -> None:
        self._children = children or []
        self._wake.set()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._pass(self._children)
            except asyncio.CancelledError:
                raise
            except Exception:
                # One bad pass must not stop the listener; the next change retries.
                self._log.exception(self._failed_event)

    async def _pass(self, children: list[str]) -> None:
        numbered = sorted(
            (n, c) for n, c in ((self.sequence_number(c), c) for c in children) if n is not None
        )
        for gone in set(self._ctimes) - {c for _, c in numbered}:
            del self._ctimes[gone]
        new = [(n, c) for n, c in numbered if n > self.last_executed]
        if new:
            # What the new notifications name, each once, in order (for flush).
            named: dict[str, None] = {}
            paths = [f"{self.path}/{c}" for _, c in new]
            if self._skip_failed:
                got = await asyncio.gather(
                    *(self.store.get(p) for p in paths), return_exceptions=True
                )
                for (number, child), path, item in zip(new, paths, got, strict=True):
                    try:
                        if isinstance(item, BaseException):
                            raise item
                        if item is not None:
                            await self._process(child, item, named)
                    except Exception as e:  # one bad notification must not stop the listener
                        self._log.error(self._failed_event, path=path, error=repr(e))
                    self.last_executed = number
            else:
                reads = await asyncio.gather(*(self.store.get(p) for p in paths))
                for (number, child), read in zip(new, reads, strict=True):
                    self.last_executed = number
                    if read is not None:  # else purged meanwhile
                        await self._process(child, read, named)
            if self._flush is not None:
                await self._flush(list(named))
        if self._purge is Purge.AFTER_PASS:
            await self._purge_expired()

    async def _process(self, child: str, read: tuple[bytes, Any], named: dict[str, None]) -> None:
        data, stat = read
        path = f"{self.path}/{child}"
        if self._purge is Purge.AFTER_PASS:
            self._ctimes[child] = stat.ctime
        name = await self._handle(path, data)
        if name is not None:
            named[name] = None
        if self._purge is Purge.WHEN_PROCESSED and self._expired(stat.ctime):
            with contextlib.suppress(NoNodeError):
                await self.store.delete(path)

    def _expired(self, ctime: int) -> bool:
        return ctime < _wall_clock_ms() - self.change_expiration_ms

    async def _purge_expired(self) -> None:
        cutoff_ms = _wall_clock_ms() - self.change_expiration_ms
        expired = [c for c, ctime in self._ctimes.items() if ctime < cutoff_ms]
        for child in expired:
            with contextlib.suppress(NoNodeError):
                await self.store.delete(f"{self.path}/{child}")
            self._ctimes.pop(child, None)
        if expired and self._purged_event is not None:
            self._log.info(self._purged_event, count=len(expired))
