"""Fault injection shared through ZooKeeper: errors, latency, dropped connections, blackholes.

Entries are zkbroker's own znodes (`/zkbroker/faults/fault-<seq>`, `FaultNode`; the sequence
number is the fault id), so every zkbroker process of a cluster applies the same ones.
`FaultInjector` (one per `Cluster`, a hook of `zkbroker.broker.server.hooks`) caches them from
a children watch, matches requests by API, broker, topic and partition, and consumes `skip` and
`count` units with versioned writes, so two brokers never take the same unit. Of the matching
entries every `latency` one adds its delay and the lowest-id other one that can be consumed
decides. The replication kinds (pause-replication, slow-replication, cut-inter-broker) match
no request: the injector hands them to its `replication` view
(`zkbroker.broker.hooks.replication_faults`), which the replica fetchers ask. `Faults` is the
control object; `add_fault`/`list_faults`/`clear_faults` serve the CLI. The kinds and options
are described in the README, "Fault injection".

Not here: an error only on the scoped topic's items (every item gets it, as Kafka's
`getErrorResponse` does, docs/kafka-behaviour.md §0), clearing entries an earlier run left.
"""

from __future__ import annotations

import asyncio
import builtins
import collections
import enum
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Any, Final, Protocol, TypeVar

from zkbroker.broker.asyncutil import cancel_and_wait
from zkbroker.broker.hooks.replication_faults import (
    ReplicationFaults,
    cut_inter_broker_entry,
    pause_replication_entry,
    slow_replication_entry,
)
from zkbroker.broker.log import get_logger
from zkbroker.broker.protocol import error_codes
from zkbroker.broker.protocol.releases import API_NAMES
from zkbroker.broker.server.hooks import HookChain, Intervention, RequestCall, RequestRecord
from zkbroker.zk_layout import BadVersionError, NoNodeError, Watch, ZkStore, ZnodeFormatError
from zkbroker.zk_layout.nodes.zkbroker import (
    ANY_RELEASE,
    FaultEntry,
    FaultKind,
    FaultNode,
    FaultsNode,
)

__all__ = [
    "Fault",
    "FaultInjector",
    "Faults",
    "InjectedFault",
    "SyncFaults",
    "add_fault",
    "api_key_of",
    "clear_faults",
    "error_code_of",
    "list_faults",
    "request_mentions",
]

T = TypeVar("T")

_TOPIC_FIELDS: Final = frozenset({"name", "topic", "topic_name", "resource_name"})
_PARTITION_FIELDS: Final = frozenset({"partition_index", "partition", "partition_id", "index"})
_PARTITION_LIST_FIELDS: Final = frozenset({"partitions", "partition_indexes"})
_MAX_RETRIES: Final = 20
_MAX_RECORDS: Final = 10_000

_API_KEYS: Final = {name.lower(): key for key, name in API_NAMES.items()}
_ERROR_CODES: Final = {name.lower(): code for code, name in error_codes.NAMES.items()}


def _number_or_name(value: int | str, by_name: Mapping[str, int]) -> int:
    """`value` itself, a decimal string, or a name of `by_name` (any case); KeyError else."""
    if isinstance(value, int):
        return value
    text = value.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    return by_name[text.lower()]


def api_key_of(api: int | str) -> int:
    """An API key from a key or a name (``19``, ``"19"``, ``"CreateTopics"``, any case)."""
    try:
        return _number_or_name(api, _API_KEYS)
    except KeyError:
        known = ", ".join(sorted(API_NAMES.values()))
        raise ValueError(f"unknown API {api!r} (known: {known}, or a numeric key)") from None


def error_code_of(code: int | str) -> int:
    """An error code from a number or a Kafka error name (``36``, ``"TOPIC_ALREADY_EXISTS"``)."""
    try:
        return _number_or_name(code, _ERROR_CODES)
    except KeyError:
        raise ValueError(f"unknown error code {code!r}") from None


@dataclass(frozen=True)
class Fault:
    """A fault entry with its id (the znode's sequence number)."""

    fault_id: int
    entry: FaultEntry

    def describe(self) -> str:
        e = self.entry
        api = (
            "*"
            if e.api is None
            else API_NAMES.get(e.api, e.api)
            if isinstance(e.api, int)
            else e.api
        )
        parts = [f"fault {self.fault_id}: {e.kind.value}"]
        if not e.kind.on_replication:  # those match no request, so no API
            parts.append(f"api={api}")
        for key in ("broker", "topic", "partition", "error_code"):
            value = getattr(e, key)
            if value is not None:
                parts.append(f"{key}={value}")
        if e.delay_ms:
            parts.append(f"delay_ms={e.delay_ms}")
        if e.skip:
            parts.append(f"skip={e.skip}")
        parts.append("count=" + ("until-cleared" if e.count is None else str(e.count)))
        return " ".join(parts)


@dataclass(frozen=True)
class InjectedFault:
    """One application of a fault to a request, as `FaultInjector.observed` counts them."""

    fault_id: int
    kind: FaultKind
    api: str
    broker_id: int
    error_code: int | None
    at: float


# ---- matching (pure) --------------------------------------------------------------------


def _children(item: Any) -> Iterator[tuple[str, Any]]:
    for f in fields(item):
        yield f.name, getattr(item, f.name)


def _structs(item: Any) -> Iterator[Any]:
    """Every dataclass instance in `item` (a dataclass, list or value), itself included."""
    stack = [item]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif is_dataclass(node) and not isinstance(node, type):
            yield node
            stack.extend(v for _, v in _children(node) if isinstance(v, list) or is_dataclass(v))


def _names_partition(name: str, value: Any, partition: int) -> bool:
    if name in _PARTITION_FIELDS:
        return isinstance(value, int) and value == partition
    return (
        name in _PARTITION_LIST_FIELDS
        and isinstance(value, list)
        and any(v == partition for v in value if isinstance(v, int))
    )


def _has_partition(item: Any, partition: int) -> bool:
    """Whether `partition` is named anywhere in `item` (a dataclass, list or value)."""
    return any(
        _names_partition(name, value, partition)
        for node in _structs(item)
        for name, value in _children(node)
    )


def request_mentions(request: Any, topic: str | None, partition: int | None) -> bool:
    """Whether a decoded request names `topic` (and, inside that topic's entry, `partition`).

    None means "any": with both None every request matches; with only `partition`, the
    partition named anywhere is enough."""
    if topic is None:
        return partition is None or _has_partition(request, partition)
    return any(
        any(n in _TOPIC_FIELDS and v == topic for n, v in _children(node))
        and (partition is None or _has_partition(node, partition))
        for node in _structs(request)
    )


def fault_matches(entry: FaultEntry, call: RequestCall) -> bool:
    """Whether `entry` applies to `call` (count aside)."""
    if entry.count == 0 or entry.kind.on_replication:
        return False
    if entry.api is not None:
        if isinstance(entry.api, int):
            if entry.api != call.header.api_key:
                return False
        elif entry.api.lower() != call.api_name.lower():
            return False
    if entry.broker is not None and entry.broker != call.broker_id:
        return False
    return request_mentions(call.request, entry.topic, entry.partition)


# ---- ZooKeeper side: the CLI and `Faults` -----------------------------------------------


async def add_fault(store: ZkStore, entry: FaultEntry) -> int:
    """Create a fault entry; returns its id."""
    if entry.kind is FaultKind.ERROR and entry.error_code is None:
        raise ValueError("an error fault needs an error code")
    if entry.delay_ms < 0 or (entry.count is not None and entry.count < 1):
        raise ValueError("delay_ms must be >= 0 and count >= 1 (or None: until cleared)")
    if entry.kind is FaultKind.BLACKHOLE and entry.count is not None:
        raise ValueError("a blackhole lasts until it is cleared: it takes no count")
    problem = entry.replication_problem()
    if problem is not None:
        raise ValueError(problem)
    path = await store.create(
        FaultNode.create_path(),
        FaultNode.encode(entry, ANY_RELEASE),
        sequence=True,
        makepath=True,
    )
    return FaultNode.sequence_number(path)


async def _read_faults(store: ZkStore) -> list[tuple[Fault, int]]:
    """Every decodable fault entry with its data version, lowest id first."""
    children = await store.get_children(FaultsNode.path()) or []
    ids = sorted(FaultNode.sequence_number(c) for c in children if FaultNode.is_child_name(c))
    got = await store.get_many([FaultNode.path(i) for i in ids])
    out: list[tuple[Fault, int]] = []
    for fault_id, item in zip(ids, got, strict=True):
        if item is None:
            continue
        data, stat = item
        try:
            out.append((Fault(fault_id, FaultNode.decode_at(data, fault_id)), int(stat.version)))
        except ZnodeFormatError as e:
            get_logger(__name__).warning("fault.invalid", fault_id=fault_id, reason=str(e))
    return out


async def list_faults(store: ZkStore) -> list[Fault]:
    """Every fault entry, lowest id first (undecodable ones are logged and left out)."""
    return [fault for fault, _ in await _read_faults(store)]


async def clear_faults(store: ZkStore, fault_id: int | None = None) -> int:
    """Delete one fault entry (`fault_id`) or all of them; returns how many were deleted."""
    if fault_id is not None:
        paths = [FaultNode.path(fault_id)]
    else:
        children = await store.get_children(FaultsNode.path()) or []
        paths = [f"{FaultsNode.path()}/{c}" for c in children]

    async def delete(path: str) -> int:
        try:
            await store.delete(path)
            return 1
        except NoNodeError:  # gone meanwhile (its last unit consumed, another clear)
            return 0

    return sum(await asyncio.gather(*(delete(p) for p in paths)))


# ---- the hook -----------------------------------------------------------------------------


class _Taken(enum.Enum):
    """What taking a unit of an entry for one request gave."""

    APPLIES = "applies"
    SKIPPED = "skipped"
    GONE = "gone"


@dataclass
class _Cached:
    fault: Fault
    version: int
    # Set when the entry is deleted: releases requests held by a blackhole.
    released: asyncio.Event


class FaultInjector:
    """The `RequestHook` of one cluster's fault entries (see the module docstring)."""

    def __init__(self, hooks: HookChain) -> None:
        # The injector is in the cluster's hook chain only while it holds faults, so requests
        # pay nothing for fault injection when there is none (an empty chain is skipped).
        self._hooks = hooks
        self._store: ZkStore | None = None
        self._cache: dict[int, _Cached] = {}
        self._watch: Watch | None = None
        self._reload_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        #: How many times each (fault id, kind) was applied to a request.
        self.injected: collections.Counter[tuple[int, str]] = collections.Counter()
        self._records: collections.deque[InjectedFault] = collections.deque(maxlen=_MAX_RECORDS)
        #: The replication faults of the cached entries, for the replica managers (a
        #: `zkbroker.broker.replication.fault_view.ReplicationFaultView`).
        self.replication = ReplicationFaults()
        self._log = get_logger(__name__)

    async def start(self, store: ZkStore) -> None:
        # The watch's first call (made before watch_children returns) finds no store and
        # reads nothing: the refresh below, made once the watch is armed, reads it all.
        self._watch = await store.watch_children(FaultsNode.path(), self._on_children)
        self._store = store
        await self.refresh()

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        # The refreshes: waited for at most `CANCEL_WAIT_S` (`cancel_and_wait`: one that does
        # not end is logged); held requests are released even when the caller is cancelled.
        try:
            await cancel_and_wait(list(self._tasks), what="faults", log=self._log)
        finally:
            for cached in self._cache.values():
                cached.released.set()
            self._cache.clear()
            self._in_chain()
            self._store = None

    # ---- cache --------------------------------------------------------------------------

    def faults(self) -> list[Fault]:
        """The entries this process currently knows, lowest id first."""
        return [self._cache[i].fault for i in sorted(self._cache)]

    def _on_children(self, children: list[str] | None) -> None:
        if self._store is None:
            return
        task = asyncio.get_running_loop().create_task(self._refresh_logged())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _refresh_logged(self) -> None:
        try:
            await self.refresh()
        except asyncio.CancelledError:
            raise
        except Exception:
            self._log.exception("fault.refresh_failed")

    async def refresh(self) -> None:
        """Re-read the entries from ZooKeeper now (the watch does it on every change)."""
        async with self._reload_lock:
            store = self._store
            if store is None:
                return
            current = await _read_faults(store)
            seen = {fault.fault_id for fault, _ in current}
            for fault_id in [i for i in self._cache if i not in seen]:
                self._forget(fault_id)
            for fault, version in current:
                cached = self._cache.get(fault.fault_id)
                if cached is None:
                    self._cache[fault.fault_id] = _Cached(fault, version, asyncio.Event())
                elif version > cached.version:
                    cached.fault, cached.version = fault, version
            self._in_chain()

    def _forget(self, fault_id: int) -> None:
        cached = self._cache.pop(fault_id, None)
        if cached is not None:
            cached.released.set()
        self._in_chain()

    def _in_chain(self) -> None:
        """After every change of the cache: the replication view rebuilt, and the injector in
        the hook chain only while an entry can match a request."""
        entries = [c.fault.entry for c in self._cache.values()]
        self.replication.update(entries)
        if any(not e.kind.on_replication for e in entries):
            self._hooks.add(self)
        else:
            self._hooks.remove(self)

    # ---- consuming ----------------------------------------------------------------------

    async def _consume(self, cached: _Cached) -> _Taken:
        """Take one unit of an entry: a request to let pass while ``skip`` is left (SKIPPED),
        else one of ``count`` (APPLIES); GONE if none is left or the entry went."""
        store = self._store
        fault_id = cached.fault.fault_id
        entry, version = cached.fault.entry, cached.version
        path = FaultNode.path(fault_id)
        for _ in range(_MAX_RETRIES):
            if entry.skip == 0 and entry.count is None:
                return _Taken.APPLIES
            if (entry.count is not None and entry.count <= 0) or store is None:
                return _Taken.GONE
            try:
                if entry.skip > 0:
                    taken, left = _Taken.SKIPPED, replace(entry, skip=entry.skip - 1)
                else:
                    assert entry.count is not None
                    taken, left = _Taken.APPLIES, replace(entry, count=entry.count - 1)
                if left.count == 0:
                    await store.delete(path, version)
                    self._forget(fault_id)
                else:
                    stat = await store.set(path, FaultNode.encode(left, ANY_RELEASE), version)
                    if fault_id in self._cache:
                        cached.fault, cached.version = Fault(fault_id, left), int(stat.version)
                return taken
            except NoNodeError:
                self._forget(fault_id)
                return _Taken.GONE
            except BadVersionError:
                try:
                    got = await store.read(FaultNode, fault_id)
                except ZnodeFormatError:
                    got = None
                if got is None:
                    self._forget(fault_id)
                    return _Taken.GONE
                entry, stat = got
                version = int(stat.version)
                if fault_id in self._cache:
                    cached.fault, cached.version = Fault(fault_id, entry), version
        self._log.warning("fault.consume_contended", fault_id=fault_id)
        return _Taken.GONE

    async def intervene(self, call: RequestCall) -> Intervention | None:
        if not self._cache:
            return None
        candidates = [c for c in self._cache.values() if fault_matches(c.fault.entry, call)]
        if not candidates:
            return None
        delay_ms = 0
        applied: list[Fault] = []
        decisive: _Cached | None = None
        for cached in sorted(candidates, key=lambda c: c.fault.fault_id):
            decides = cached.fault.entry.kind is not FaultKind.LATENCY
            if decides and decisive is not None:
                continue
            if await self._consume(cached) is not _Taken.APPLIES:
                continue  # skipped (this request passes the entry) or gone
            if decides:
                decisive = cached
            delay_ms += cached.fault.entry.delay_ms
            applied.append(cached.fault)
        if not applied:
            return None
        for fault in applied:
            self._note_injected(fault, call)
        if decisive is None:
            source = f"fault:{applied[0].fault_id}"
            return Intervention(delay_s=delay_ms / 1000, source=source)
        entry = decisive.fault.entry
        source = f"fault:{decisive.fault.fault_id}"
        return Intervention(
            delay_s=delay_ms / 1000,
            hold=decisive.released if entry.kind is FaultKind.BLACKHOLE else None,
            drop=entry.kind is FaultKind.DROP,
            error_code=entry.error_code if entry.kind is FaultKind.ERROR else None,
            source=source,
        )

    def observe(self, record: RequestRecord) -> None:
        """Nothing to do: injections are counted when they are decided."""

    # ---- what was injected --------------------------------------------------------------

    def _note_injected(self, fault: Fault, call: RequestCall) -> None:
        entry = fault.entry
        self.injected[(fault.fault_id, entry.kind.value)] += 1
        error_code = entry.error_code if entry.kind is FaultKind.ERROR else None
        self._records.append(
            InjectedFault(
                fault.fault_id, entry.kind, call.api_name, call.broker_id, error_code, time.time()
            )
        )
        self._log.info(
            "fault.injected",
            fault_id=fault.fault_id,
            kind=entry.kind.value,
            api=call.api_name,
            broker_id=call.broker_id,
            error_code=error_code,
            delay_ms=entry.delay_ms,
            connection_id=call.connection.connection_id,
        )

    def observed(
        self,
        fault_id: int | None = None,
        *,
        kind: FaultKind | str | None = None,
        api: int | str | None = None,
        broker: int | None = None,
        error_code: int | None = None,
    ) -> list[InjectedFault]:
        """Injections by this process's brokers, oldest first, filtered by whatever is given."""
        api_name = None if api is None else API_NAMES.get(api_key_of(api))
        return [
            r
            for r in self._records
            if (fault_id is None or r.fault_id == fault_id)
            and (kind is None or r.kind == kind)
            and (api_name is None or r.api == api_name)
            and (broker is None or r.broker_id == broker)
            and (error_code is None or r.error_code == error_code)
        ]


# ---- the control object -------------------------------------------------------------------


class Faults:
    """`Cluster.faults`: add, list and clear fault entries (on the cluster's own ZooKeeper
    session) and ask what this process's brokers injected. Each change is in this process's
    cache before the method returns, so the very next request sees it."""

    def __init__(self, store: Callable[[], ZkStore | None], injector: FaultInjector) -> None:
        self._store_of = store
        self.injector = injector
        #: `FaultInjector.observed`: what this process's brokers injected.
        self.observed = injector.observed

    def _store(self) -> ZkStore:
        store = self._store_of()
        if store is None:
            raise RuntimeError("the cluster is not started")
        return store

    async def _add(self, entry: FaultEntry) -> int:
        fault_id = await add_fault(self._store(), entry)
        await self.injector.refresh()
        return fault_id

    async def push_error(
        self,
        api: int | str,
        error_code: int | str,
        count: int | None = 1,
        broker: int | None = None,
        topic: str | None = None,
        partition: int | None = None,
        delay_ms: int = 0,
        skip: int = 0,
    ) -> int:
        """`count` matching requests (None: all until cleared) get `error_code`, after `skip`
        matching requests passed untouched; returns the id."""
        if skip < 0:
            raise ValueError(f"skip must be >= 0, got {skip}")
        return await self._add(
            FaultEntry(
                kind=FaultKind.ERROR,
                api=api_key_of(api),
                broker=broker,
                topic=topic,
                partition=partition,
                error_code=error_code_of(error_code),
                delay_ms=delay_ms,
                count=count,
                skip=skip,
            )
        )

    async def add_latency(
        self, delay_ms: int, api: int | str | None = None, broker: int | None = None
    ) -> int:
        """Delay every matching request by `delay_ms` until cleared; returns the id."""
        return await self._add(
            FaultEntry(
                kind=FaultKind.LATENCY,
                api=None if api is None else api_key_of(api),
                broker=broker,
                delay_ms=delay_ms,
            )
        )

    async def drop_next(
        self, api: int | str, broker: int | None = None, count: int = 1, skip: int = 0
    ) -> int:
        """Close the connection of the next `count` matching requests after `skip` matching
        requests passed; returns the id."""
        if skip < 0:
            raise ValueError(f"skip must be >= 0, got {skip}")
        return await self._add(
            FaultEntry(
                kind=FaultKind.DROP, api=api_key_of(api), broker=broker, count=count, skip=skip
            )
        )

    async def blackhole(self, api: int | str | None = None, broker: int | None = None) -> int:
        """Answer no matching request until this fault is cleared; returns the id."""
        return await self._add(
            FaultEntry(
                kind=FaultKind.BLACKHOLE,
                api=None if api is None else api_key_of(api),
                broker=broker,
            )
        )

    async def pause_replication(
        self, broker: int, topic: str | None = None, partition: int | None = None
    ) -> int:
        """Follower `broker` sends no fetch for the matching partitions (every one when no
        topic or partition is given) until cleared; returns the id."""
        return await self._add(pause_replication_entry(broker, topic, partition))

    async def slow_replication(
        self, broker: int, delay_ms: int, topic: str | None = None, partition: int | None = None
    ) -> int:
        """Each fetch round of follower `broker` for the matching partitions waits `delay_ms`
        first, until cleared; returns the id."""
        return await self._add(slow_replication_entry(broker, delay_ms, topic, partition))

    async def cut_inter_broker(self, broker: int) -> int:
        """Broker `broker` neither fetches from a leader nor is fetched from, and its ISR
        writes fail, until cleared; its ZooKeeper session stays. Returns the id."""
        return await self._add(cut_inter_broker_entry(broker))

    async def clear(self, fault_id: int | None = None) -> int:
        """Delete one fault (or all); returns how many were deleted."""
        removed = await clear_faults(self._store(), fault_id)
        await self.injector.refresh()
        return removed

    async def list(self) -> list[Fault]:
        return await list_faults(self._store())

    async def refresh(self) -> None:
        """Re-read the entries now (e.g. right after another process pushed one)."""
        await self.injector.refresh()


class _Runner(Protocol):
    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = ...) -> T: ...

    def run_sync(self, fn: Callable[[], T], timeout: float | None = ...) -> T: ...


class SyncFaults:
    """`Faults` for synchronous callers (`zkbroker.Cluster.faults` in `with` mode): the same
    methods, each run on the cluster's loop and waited for."""

    def __init__(self, faults: Faults, runner: _Runner) -> None:
        self._faults = faults
        self._runner = runner

    def push_error(
        self,
        api: int | str,
        error_code: int | str,
        count: int | None = 1,
        broker: int | None = None,
        topic: str | None = None,
        partition: int | None = None,
        delay_ms: int = 0,
        skip: int = 0,
    ) -> int:
        return self._runner.call(
            self._faults.push_error(
                api, error_code, count, broker, topic, partition, delay_ms, skip
            )
        )

    def add_latency(
        self, delay_ms: int, api: int | str | None = None, broker: int | None = None
    ) -> int:
        return self._runner.call(self._faults.add_latency(delay_ms, api, broker))

    def drop_next(
        self, api: int | str, broker: int | None = None, count: int = 1, skip: int = 0
    ) -> int:
        return self._runner.call(self._faults.drop_next(api, broker, count, skip))

    def blackhole(self, api: int | str | None = None, broker: int | None = None) -> int:
        return self._runner.call(self._faults.blackhole(api, broker))

    def pause_replication(
        self, broker: int, topic: str | None = None, partition: int | None = None
    ) -> int:
        return self._runner.call(self._faults.pause_replication(broker, topic, partition))

    def slow_replication(
        self, broker: int, delay_ms: int, topic: str | None = None, partition: int | None = None
    ) -> int:
        return self._runner.call(self._faults.slow_replication(broker, delay_ms, topic, partition))

    def cut_inter_broker(self, broker: int) -> int:
        return self._runner.call(self._faults.cut_inter_broker(broker))

    def clear(self, fault_id: int | None = None) -> int:
        return self._runner.call(self._faults.clear(fault_id))

    def list(self) -> builtins.list[Fault]:
        return self._runner.call(self._faults.list())

    def refresh(self) -> None:
        self._runner.call(self._faults.refresh())

    def observed(
        self,
        fault_id: int | None = None,
        *,
        kind: FaultKind | str | None = None,
        api: int | str | None = None,
        broker: int | None = None,
        error_code: int | None = None,
    ) -> builtins.list[InjectedFault]:
        return self._runner.run_sync(
            lambda: self._faults.observed(
                fault_id, kind=kind, api=api, broker=broker, error_code=error_code
            )
        )
