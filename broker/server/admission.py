"""Admission limits of one broker's listener as pure code: connection quotas, idle expiry and
the request memory pool, with no sockets and no clock of their own.

Follows Kafka's `SocketServer.ConnectionQuotas` (KIP-402), `Selector`'s idle expiry and
`SimpleMemoryPool` (docs/kafka-behaviour.md §0, "Connection limits"). `ReportThrottle` is
"log once per interval, counting the rest".

Not here: sockets, tasks and logging (`zkbroker.broker.server.listener`, which also resolves
override host names), connection creation rate quotas (KIP-612) and KIP-402's exemption of the
inter-broker listener from `max.connections` (every listener is limited alike).
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
# Requests up to this size are read outside the request memory pool, never waiting for it:
# every connection may already buffer this much unread (the listener's stream buffer), and
# one request at a time is read per connection, so they add nothing a connection could not
# hold anyway, while the pool's waits stay for the requests that could exhaust it.
UNPOOLED_REQUEST_BYTES = 65536


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
    """Bytes reserved for requests being read (Kafka's SimpleMemoryPool, non-strict).

    A request of at most `unpooled_bytes` is outside the pool: never counted, never waiting
    (the listener passes UNPOOLED_REQUEST_BYTES; 0 is Kafka's pool, where every request draws
    on it)."""

    def __init__(self, capacity: int, unpooled_bytes: int = 0) -> None:
        self.capacity = capacity
        self.available = capacity
        self.unpooled_bytes = unpooled_bytes

    @property
    def bounded(self) -> bool:
        return self.capacity > 0

    def pooled(self, size: int) -> bool:
        """Does a request of `size` bytes draw on the pool?"""
        return self.capacity > 0 and size > self.unpooled_bytes

    def try_allocate(self, size: int) -> bool:
        """Reserve `size` bytes if any memory is left (the pool may go negative by one
        request, as Kafka's non-strict pool does); False: wait for a release."""
        if not self.pooled(size):
            return True
        if self.available <= 0:
            return False
        self.available -= size
        return True

    def release(self, size: int) -> None:
        if self.pooled(size):
            self.available = min(self.capacity, self.available + size)

    def resize(self, capacity: int) -> None:
        """A new capacity; what is reserved stays reserved."""
        in_use = self.capacity - self.available if self.bounded else 0
        self.capacity = capacity
        self.available = capacity - in_use if capacity > 0 else capacity


@dataclass
class RequestRead:
    """Where a connection is in its current request: the `size` its prefix announced (0:
    between requests), the bytes `received` so far (-1: a small request, read whole rather
    than counted), and whether it waits for the pool before being read."""

    size: int = 0
    received: int = -1
    waiting_for_pool: bool = False


def idle_close_reason(reading: RequestRead | None, max_idle_ms: int) -> str:
    """Why a connection idle for longer than `connections.max.idle.ms` is closed. Kafka's
    selector counts any bytes read as activity, a partial request's too, so a request whose
    client stops sending is closed by the same setting; the reason says so, and how much of
    the request had come."""
    setting = f"connections.max.idle.ms ({max_idle_ms} ms)"
    if reading is None or reading.size <= 0:
        return f"idle for more than {setting}"
    if reading.waiting_for_pool:
        return (
            f"a {reading.size}-byte request waited unread for queued.max.request.bytes for "
            f"more than {setting}"
        )
    if reading.received < 0:
        return (
            f"unfinished request of {reading.size} bytes: nothing more received for more "
            f"than {setting}"
        )
    return (
        f"unfinished request: {reading.received} of {reading.size} bytes received, then "
        f"nothing more for more than {setting}"
    )


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
