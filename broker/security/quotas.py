"""Client quotas of a broker: every entity's quota values and the per-broker sensors that turn
traffic into throttle times, as Kafka's `ClientQuotaManager` and `ClientRequestQuotaManager`
(docs/kafka-behaviour.md §22).

`ClientQuotaConfigs` (one per process, kept current by `zkbroker.broker.image.config_watcher`)
maps entity path -> quota key -> value. `ClientQuotaManager` (one per broker,
`quota_manager_of`) records produce bytes, fetch bytes and request time on the sensor of the
quota that applies (`zkbroker.broker.rules.quota_rates.find_quota`) and returns the throttle
time; idle sensors are dropped after an hour. `mutation_quota_for` gives the KIP-599 token
bucket, `ip_connection_throttle_ms` the KIP-612 per-IP connection throttle.

Not here: applying the throttle (`zkbroker.broker.server.listener`), the broker-wide
max.connection.creation.rate, replica fetch quotas.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from zkbroker.broker.protocol.api_keys import API_KEYS, ApiKey
from zkbroker.broker.rules.quota_rates import (
    SampledRate,
    TokenBucket,
    find_quota,
    record_and_throttle_ms,
    token_throttle_ms,
)
from zkbroker.zk_layout import sanitize

PRODUCE_KEY: Final = ApiKey.PRODUCE
FETCH_KEY: Final = ApiKey.FETCH
PRODUCER_BYTE_RATE: Final = "producer_byte_rate"
CONSUMER_BYTE_RATE: Final = "consumer_byte_rate"
REQUEST_PERCENTAGE: Final = "request_percentage"
CONTROLLER_MUTATION_RATE: Final = "controller_mutation_rate"
CONNECTION_CREATION_RATE: Final = "connection_creation_rate"
QUOTA_KEYS: Final = (
    PRODUCER_BYTE_RATE,
    CONSUMER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    CONTROLLER_MUTATION_RATE,
    CONNECTION_CREATION_RATE,
)
# The first version of each mutating API whose quota is strict (KIP-599): over the quota, a
# topic is refused with THROTTLING_QUOTA_EXCEEDED; older versions are only throttled.
STRICT_SINCE: Final[Mapping[int, int]] = {
    ApiKey.CREATE_TOPICS: 6,
    ApiKey.DELETE_TOPICS: 5,
    ApiKey.CREATE_PARTITIONS: 3,
}
MUTATION_QUOTA_SINCE: Final = (2, 7)  # KIP-599
# Keys Kafka exempts from the request quota: cluster actions and what a client needs before it
# can be throttled at all (ApiVersions, SASL): the `quota_exempt` column of the API key table.
EXEMPT_KEYS: Final = frozenset(key for key, row in API_KEYS.items() if row.quota_exempt)
INACTIVE_SENSOR_S: Final = 3600.0


def _to_float(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:
        return None


UserListener = Callable[[str, Mapping[str, str]], None]


class ClientQuotaConfigs:
    """Quota values per entity path; `generation` grows with every change. It also passes each
    `users/<u>` entity the watcher reads to the user listeners (the brokers' SCRAM credential
    caches), so /config/changes has one follower per process."""

    def __init__(self) -> None:
        self._entities: dict[str, dict[str, float]] = {}
        self._user_listeners: list[UserListener] = []
        self.generation = 0

    def subscribe_users(self, listener: UserListener) -> None:
        self._user_listeners.append(listener)

    def unsubscribe_users(self, listener: UserListener) -> None:
        if listener in self._user_listeners:
            self._user_listeners.remove(listener)

    def set_entity(self, entity_path: str, props: Mapping[str, str]) -> None:
        entity_type, _, name = entity_path.partition("/")
        if entity_type == "users" and "/" not in name:
            for listener in list(self._user_listeners):
                listener(name, props)
        values = {k: v for k in QUOTA_KEYS if k in props and (v := _to_float(props[k])) is not None}
        if values:
            self._entities[entity_path] = values
        else:
            self._entities.pop(entity_path, None)
        self.generation += 1

    @property
    def entities(self) -> Mapping[str, Mapping[str, float]]:
        return self._entities

    def __bool__(self) -> bool:
        return bool(self._entities)


@dataclass
class _Sensor:
    rate: SampledRate
    last_used: float = field(default_factory=time.monotonic)


@dataclass
class WindowConfig:
    """quota.window.num and quota.window.size.seconds."""

    samples: int = 11
    window_s: int = 1

    @classmethod
    def from_configs(cls, configs: Mapping[str, str], prefix: str = "") -> WindowConfig:
        """From quota.window.* (or controller.quota.window.* with `prefix`)."""
        try:
            return cls(
                int(configs.get(f"{prefix}quota.window.num", "11")),
                int(configs.get(f"{prefix}quota.window.size.seconds", "1")),
            )
        except ValueError:
            return cls()


class ClientQuotaManager:
    def __init__(
        self,
        configs: ClientQuotaConfigs,
        window: WindowConfig,
        controller_window: WindowConfig | None = None,
    ) -> None:
        self.configs = configs
        self.window = window
        self.controller_window = controller_window or WindowConfig()
        self._buckets: dict[tuple[str, str], TokenBucket] = {}
        self._ip_rates: dict[str, tuple[float, SampledRate]] = {}
        self._sensors: dict[tuple[str, str, str], _Sensor] = {}
        self._last_sweep = time.monotonic()

    def _record(self, key: str, user: str, client_id: str, value: float, max_ms: int | None) -> int:
        match = find_quota(self.configs.entities, key, user, client_id)
        if match is None:
            return 0
        now = time.monotonic()
        sensor_key = (key, match.user_tag, match.client_tag)
        sensor = self._sensors.get(sensor_key)
        if sensor is None:
            rate = SampledRate(self.window.samples, self.window.window_s * 1000)
            sensor = self._sensors[sensor_key] = _Sensor(rate)
        sensor.last_used = now
        throttle = record_and_throttle_ms(sensor.rate, value, match.bound, int(now * 1000), max_ms)
        if now - self._last_sweep > 60:
            self._sweep(now)
        return throttle

    def _sweep(self, now: float) -> None:
        self._last_sweep = now
        idle = [k for k, s in self._sensors.items() if now - s.last_used > INACTIVE_SENSOR_S]
        for k in idle:
            del self._sensors[k]

    def throttle_ms(
        self,
        api_key: int,
        principal: str,
        client_id: str | None,
        request_bytes: int,
        response_bytes: int,
        handler_s: float,
    ) -> int:
        """The throttle time of one answered request (0: none)."""
        if not self.configs or api_key in EXEMPT_KEYS:
            return 0
        user = sanitize(principal.partition(":")[2] or principal)
        client = sanitize(client_id or "")
        percentage = handler_s * 100.0
        request_throttle = self._record(
            REQUEST_PERCENTAGE, user, client, percentage, self.window.window_s * 1000
        )
        if api_key == PRODUCE_KEY:
            produce = self._record(PRODUCER_BYTE_RATE, user, client, request_bytes, None)
            return max(produce, request_throttle)
        if api_key == FETCH_KEY:
            fetch = self._record(CONSUMER_BYTE_RATE, user, client, response_bytes, None)
            return max(fetch, request_throttle)
        return request_throttle

    def mutation_quota(
        self, api_key: int, version: int, principal: str, client_id: str | None
    ) -> ControllerMutationQuota:
        """KafkaApis' `quotas.controllerMutation.newQuotaFor(request, strictSinceVersion)`."""
        user = sanitize(principal.partition(":")[2] or principal)
        client = sanitize(client_id or "")
        match = find_quota(self.configs.entities, CONTROLLER_MUTATION_RATE, user, client)
        if match is None:
            return ControllerMutationQuota(None, 0.0, strict=False)
        key = (match.user_tag, match.client_tag)
        bucket = self._buckets.get(key)
        window = self.controller_window
        burst = match.bound * window.samples * window.window_s
        if bucket is None or bucket.quota != match.bound:
            bucket = self._buckets[key] = TokenBucket(match.bound, burst)
        strict = version >= STRICT_SINCE.get(api_key, 1 << 15)
        return ControllerMutationQuota(bucket, match.bound, strict=strict)

    def connection_throttle_ms(self, ip: str) -> int:
        """ConnectionQuotas.recordIpConnectionMaybeThrottle: a new connection from `ip` is
        recorded on its connection_creation_rate (the ip's own, else `ips/<default>`); over
        it, the connection is not counted and the throttle (at most one window) is returned."""
        entities = self.configs.entities
        own = entities.get(f"ips/{ip}", {})
        bound = own.get(CONNECTION_CREATION_RATE)
        if bound is None:
            bound = entities.get("ips/<default>", {}).get(CONNECTION_CREATION_RATE)
        if bound is None:
            self._ip_rates.pop(ip, None)
            return 0
        known = self._ip_rates.get(ip)
        if known is None or known[0] != bound:
            rate = SampledRate(self.window.samples, self.window.window_s * 1000)
            known = self._ip_rates[ip] = (bound, rate)
        now_ms = int(time.monotonic() * 1000)
        throttle = record_and_throttle_ms(
            known[1], 1.0, bound, now_ms, max_ms=self.window.window_s * 1000
        )
        if throttle > 0:
            known[1].record(-1.0, now_ms)  # Kafka: a throttled connection is not counted
        return throttle


def ip_connection_throttle_ms(broker: Any, ip: str) -> int:
    """For the listener's accept path: 0, or how long to hold a connection before closing it."""
    configs: ClientQuotaConfigs = broker.image.client_quotas
    if not configs:
        return 0
    manager = quota_manager_of(broker, configs, dict(broker.settings.broker_configs))
    return manager.connection_throttle_ms(ip)


def set_throttle_time(response: Any, throttle_ms: int) -> bool:
    """Put the throttle in a response that has the field (KafkaApis: the larger of the two);
    True when it changed. Responses of versions without it are only muted."""
    current = getattr(response, "throttle_time_ms", None)
    if not isinstance(current, int) or current >= throttle_ms:
        return False
    response.throttle_time_ms = throttle_ms
    return True


@dataclass
class ControllerMutationQuota:
    """One request's controller mutation quota (Kafka's Strict/PermissiveControllerMutationQuota).

    A handler calls `record(partitions)` before each topic it creates, deletes or extends:
    False means the topic is refused with THROTTLING_QUOTA_EXCEEDED (null message: the
    exception carries the error's default text, which ApiError.fromThrowable drops); at the end
    it puts `throttle_time_ms` in the response (the listener mutes the connection for the larger
    of it and the request quota's).

    Strict: a record is refused when the bucket is already in deficit (Sensor.checkQuotas
    first), and an accepted one never throttles, even when it leaves the bucket in deficit
    (the next request pays). Permissive: every record is accepted and a deficit afterwards
    throttles. Like AbstractControllerMutationQuota.throttleTime, the throttle shrinks by the
    time elapsed since it was recorded (a request may wait for its topics' leaders)."""

    bucket: TokenBucket | None
    quota: float
    strict: bool
    _last_throttle_ms: int = 0
    _recorded_at: float = 0.0

    def record(self, permits: float) -> bool:
        if self.bucket is None:
            return True
        now = time.monotonic()
        now_ms = int(now * 1000)
        if self.strict:
            tokens = self.bucket.tokens_at(now_ms)
            if tokens < 0:
                self._violated(token_throttle_ms(tokens, self.quota), now)
                return False
            self.bucket.record(permits, now_ms)
            return True
        self.bucket.record(permits, now_ms)
        if self.bucket.tokens < 0:
            self._violated(token_throttle_ms(self.bucket.tokens, self.quota), now)
        return True

    def _violated(self, throttle_ms: int, now: float) -> None:
        self._last_throttle_ms = throttle_ms
        self._recorded_at = now

    @property
    def throttle_time_ms(self) -> int:
        if self._last_throttle_ms <= 0:
            return 0
        elapsed_ms = int((time.monotonic() - self._recorded_at) * 1000)
        return max(0, self._last_throttle_ms - elapsed_ms)


def mutation_quota_for(
    broker: Any, api_key: int, version: int, principal: str, client_id: str | None
) -> ControllerMutationQuota:
    """For a handler: `mutation_quota_for(ctx.broker, API_KEY, ctx.version,
    ctx.connection.principal, ctx.header.client_id)` (a no-op quota without any configured, and
    before Kafka 2.7, which has no controller mutation quota)."""
    configs: ClientQuotaConfigs = broker.image.client_quotas
    if not configs or tuple(broker.settings.kafka_version) < MUTATION_QUOTA_SINCE:
        return ControllerMutationQuota(None, 0.0, strict=False)
    manager = quota_manager_of(broker, configs, dict(broker.settings.broker_configs))
    return manager.mutation_quota(api_key, version, principal, client_id)


class QuotaManagerSlot:
    """Where a broker keeps its one `ClientQuotaManager` (``BrokerNode.quota_slot``), shared
    by its listeners and handlers; rebuilt when the quota configs it reads are replaced."""

    def __init__(self) -> None:
        self._manager: ClientQuotaManager | None = None

    def get(
        self, configs: ClientQuotaConfigs, broker_configs: Mapping[str, str]
    ) -> ClientQuotaManager:
        manager = self._manager
        if manager is None or manager.configs is not configs:
            manager = self._manager = ClientQuotaManager(
                configs,
                WindowConfig.from_configs(broker_configs),
                WindowConfig.from_configs(broker_configs, "controller."),
            )
        return manager


def quota_manager_of(
    broker: Any, configs: ClientQuotaConfigs, broker_configs: Mapping[str, str]
) -> ClientQuotaManager:
    """The broker's one manager (its `quota_slot`), shared by its listeners."""
    slot: QuotaManagerSlot = broker.quota_slot
    return slot.get(configs, broker_configs)
