"""Admission limits of one broker's listener as pure code: Kafka's connection quotas, idle
expiry and request memory pool, with no sockets and no clock of their own.

What each part emulates (apache/kafka `core/src/main/scala/kafka/network/SocketServer.scala`,
`ConnectionQuotas`, KIP-402 for `max.connections`; `clients/.../network/Selector.java`
`IdleExpiryManager`; `clients/.../memory/SimpleMemoryPool.java`):

* `AdmissionLimits.from_config(lookup, ...)`: the effective values of `max.connections` (plus a
  `listener.name.<listener>.max.connections` override), `max.connections.per.ip`,
  `max.connections.per.ip.overrides` (Kafka's `host:count,host:count`, split as
  `CoreUtils.parseCsvMap` does), `connections.max.idle.ms` and `queued.max.request.bytes`, read
  through `lookup(name) -> text | None` (the broker's layered configuration).
* `ConnectionQuotas`: `slot_available()` is Kafka's `connectionSlotAvailable` -- at
  `max.connections` the acceptor stops accepting until a connection closes (new clients wait in
  the kernel's backlog: connected, unanswered); `admit(ip)` is `inc()` -- over the per-IP limit
  the new connection is refused (`TooManyConnectionsException`: Kafka logs it and closes the
  socket at once); `excess()` is how many connections exceed a lowered `max.connections`
  (Kafka's processors then close the least recently used ones, `closeExcessConnections`).
  `update(limits)` applies a dynamic change to new connections, as Kafka's reconfigurable
  ConnectionQuotas does; connections already open stay.
* `IdleConnections`: the access-ordered LRU of `IdleExpiryManager`: `touch` on activity,
  `expired(now)` yields the connections idle for longer than `connections.max.idle.ms`, oldest
  first (a negative value disables expiry, as in Kafka's Selector), `oldest()` is
  `lowestPriorityChannel`.
* `RequestMemoryPool`: `SimpleMemoryPool` in Kafka's non-strict mode: an allocation succeeds
  while any memory is left (so the total may exceed the capacity by one allocation), otherwise
  the connection is not read until memory is released; a capacity <= 0 is unbounded (Kafka's
  `MemoryPool.NONE`). The listener allocates the bytes of a request as they arrive, in pieces
  (Kafka allocates the announced size when the size prefix arrives).
* `ReportThrottle`: "log once per interval": the first failure is reported, later ones within
  the interval are only counted and the count goes with the next report.

Deliberately not here: sockets, tasks and logging (`zkbroker.broker.server.listener`), the
connection creation rate quotas (`max.connection.creation.rate`, KIP-612) and the protected
inter-broker listener of KIP-402 (a zkbroker broker has one listener, so it is never protected), and
DNS: override host names are resolved by the listener, which passes them in already resolved.
"""

from __future__ import annotations

import ipaddress
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

INT_MAX = 2_147_483_647

# Kafka's defaults (KafkaConfig / SocketServerConfigs).
DEFAULT_MAX_CONNECTIONS = INT_MAX
DEFAULT_MAX_CONNECTIONS_PER_IP = INT_MAX
DEFAULT_CONNECTIONS_MAX_IDLE_MS = 600_000


class InvalidOverrides(ValueError):
    """`max.connections.per.ip.overrides` that Kafka could not parse."""


def parse_overrides(text: str) -> dict[str, int]:
    """`host:count,host:count` as Kafka reads it (`CoreUtils.parseCsvMap`, then `toInt`):
    entries split on commas, each at its last colon (so `[::1]:5` and `::1:5` both work)."""
    result: dict[str, int] = {}
    if not text.strip():
        return result
    for entry in text.split(","):
        entry = entry.strip()
        host, sep, count = entry.rpartition(":")
        if not sep:
            raise InvalidOverrides(f"entry {entry!r} is not host:count")
        host = host.strip().removeprefix("[").removesuffix("]")
        try:
            value = int(count.strip())
        except ValueError:
            raise InvalidOverrides(f"entry {entry!r}: {count.strip()!r} is not a number") from None
        if not INT_MAX >= value >= -INT_MAX - 1:
            raise InvalidOverrides(f"entry {entry!r}: {value} does not fit an int")
        result[host] = value
    return result


def normalize_ip(text: str) -> str:
    """The canonical text of an address (IPv4-mapped IPv6 as IPv4, so `::ffff:127.0.0.1` and
    `127.0.0.1` count as one client); a name that is not an address is returned as given."""
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return text
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


@dataclass(frozen=True)
class AdmissionLimits:
    """The admission limits one broker applies (see the module docstring)."""

    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_connections_per_ip: int = DEFAULT_MAX_CONNECTIONS_PER_IP
    # Override host (as configured) -> count; the listener resolves names to addresses.
    per_ip_overrides: Mapping[str, int] = field(default_factory=dict)
    connections_max_idle_ms: int = DEFAULT_CONNECTIONS_MAX_IDLE_MS
    # <= 0: unbounded.
    queued_max_request_bytes: int = -1

    @classmethod
    def from_config(
        cls,
        lookup: Callable[[str], str | None],
        listener_name: str,
        *,
        queued_default: int = -1,
        on_invalid: Callable[[str, str], None] | None = None,
    ) -> AdmissionLimits:
        """The limits `lookup` (effective config text by name, None when unset) gives; a value
        that does not parse keeps Kafka's default and is reported to `on_invalid(name, why)`."""

        def number(name: str, default: int) -> int:
            text = lookup(name)
            if text is None or not text.strip():
                return default
            try:
                return int(text.strip())
            except ValueError:
                if on_invalid is not None:
                    on_invalid(name, f"{text!r} is not a number")
                return default

        max_connections = number("max.connections", DEFAULT_MAX_CONNECTIONS)
        per_listener = number(f"listener.name.{listener_name.lower()}.max.connections", INT_MAX)
        overrides: dict[str, int] = {}
        try:
            overrides = parse_overrides(lookup("max.connections.per.ip.overrides") or "")
        except InvalidOverrides as e:
            if on_invalid is not None:
                on_invalid("max.connections.per.ip.overrides", str(e))
        return cls(
            max_connections=min(max_connections, per_listener),
            max_connections_per_ip=number("max.connections.per.ip", DEFAULT_MAX_CONNECTIONS_PER_IP),
            per_ip_overrides=overrides,
            connections_max_idle_ms=number(
                "connections.max.idle.ms", DEFAULT_CONNECTIONS_MAX_IDLE_MS
            ),
            queued_max_request_bytes=number("queued.max.request.bytes", queued_default),
        )


@dataclass(frozen=True)
class TooManyConnections:
    """Kafka's TooManyConnectionsException: `ip` already has `limit` connections."""

    ip: str
    limit: int

    @property
    def message(self) -> str:
        return (
            f"Rejected connection from {self.ip}, address already has the configured maximum "
            f"of {self.limit} connections."
        )


class ConnectionQuotas:
    """Connection counts of one broker against its limits (Kafka's ConnectionQuotas)."""

    def __init__(
        self, limits: AdmissionLimits, resolved_overrides: Mapping[str, int] | None = None
    ) -> None:
        self.limits = limits
        self._overrides: dict[str, int] = {}
        self._counts: dict[str, int] = {}
        self.total = 0
        self.update(limits, resolved_overrides)

    def update(
        self, limits: AdmissionLimits, resolved_overrides: Mapping[str, int] | None = None
    ) -> None:
        """New limits for new connections (Kafka's reconfigure); `resolved_overrides` maps
        addresses to counts (default: the configured overrides, normalised as addresses)."""
        self.limits = limits
        source = limits.per_ip_overrides if resolved_overrides is None else resolved_overrides
        self._overrides = {normalize_ip(host): count for host, count in source.items()}

    def limit_for(self, ip: str) -> int:
        return self._overrides.get(ip, self.limits.max_connections_per_ip)

    def count(self, ip: str) -> int:
        return self._counts.get(ip, 0)

    def slot_available(self) -> bool:
        """May the acceptor take one more connection (Kafka's connectionSlotAvailable)?"""
        return self.total < self.limits.max_connections

    def excess(self) -> int:
        """Connections above a (lowered) `max.connections`, to close least recently used."""
        return max(0, self.total - self.limits.max_connections)

    def admit(self, ip: str) -> TooManyConnections | None:
        """Count a new connection from `ip`, or refuse it (nothing counted) when `ip` already
        holds its limit."""
        count = self._counts.get(ip, 0)
        limit = self.limit_for(ip)
        if count >= limit:
            return TooManyConnections(ip, limit)
        self._counts[ip] = count + 1
        self.total += 1
        return None

    def release(self, ip: str) -> None:
        """A counted connection from `ip` closed."""
        count = self._counts.get(ip, 0)
        if count <= 0:
            return
        if count == 1:
            del self._counts[ip]
        else:
            self._counts[ip] = count - 1
        self.total -= 1


class IdleConnections:
    """Connections ordered by their last activity, least recent first (IdleExpiryManager).

    Only connections that may expire are tracked: the listener removes one while a request of
    it is being handled and touches it again when the answer is written.
    """

    def __init__(self, max_idle_ms: int) -> None:
        self.max_idle_s = max_idle_ms / 1000
        self.enabled = max_idle_ms >= 0
        self._last: OrderedDict[str, float] = OrderedDict()

    def __len__(self) -> int:
        return len(self._last)

    def touch(self, connection_id: str, now: float) -> None:
        self._last[connection_id] = now
        self._last.move_to_end(connection_id)

    def remove(self, connection_id: str) -> None:
        self._last.pop(connection_id, None)

    def oldest(self) -> str | None:
        return next(iter(self._last), None)

    def expired(self, now: float) -> Iterator[str]:
        """Pop and yield every connection idle for more than the limit, oldest first: work
        proportional to what expires, not to what is open."""
        if not self.enabled:
            return
        deadline = now - self.max_idle_s
        while self._last:
            connection_id, last = next(iter(self._last.items()))
            if last > deadline:
                return
            del self._last[connection_id]
            yield connection_id


class RequestMemoryPool:
    """Bytes reserved for requests being read (Kafka's SimpleMemoryPool, non-strict)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.available = capacity

    @property
    def bounded(self) -> bool:
        return self.capacity > 0

    def try_allocate(self, size: int) -> bool:
        """Reserve `size` bytes if any memory is left (the pool may go negative by one
        request, as Kafka's non-strict pool does); False: wait for a release."""
        if not self.bounded:
            return True
        if self.available <= 0:
            return False
        self.available -= size
        return True

    def release(self, size: int) -> None:
        if self.bounded:
            self.available = min(self.capacity, self.available + size)

    def resize(self, capacity: int) -> None:
        """A new capacity; what is reserved stays reserved."""
        in_use = self.capacity - self.available if self.bounded else 0
        self.capacity = capacity
        self.available = capacity - in_use if capacity > 0 else capacity


class ReportThrottle:
    """At most one report per `interval_s`: `failed(now)` says whether to report now, and
    `suppressed` how many failures went unreported since the last report."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._last_report: float | None = None
        self.suppressed = 0

    def failed(self, now: float) -> bool:
        if self._last_report is None or now - self._last_report >= self.interval_s:
            self._last_report = now
            return True
        self.suppressed += 1
        return False

    def take_suppressed(self) -> int:
        count, self.suppressed = self.suppressed, 0
        return count
