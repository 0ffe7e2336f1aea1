"""The rate math of Kafka's client quotas, as pure code: sampled rates, the throttle time of a
violation, and which quota entity applies to a (user, client-id).

Follows Kafka 3.9's `Rate` / `SampledStat`, `Sensor.record`, `QuotaUtils.throttleTime` and
`boundedThrottleTime`, and `DefaultQuotaCallback.quotaMetricTags`'s precedence, which also says
who shares a quota (docs/kafka-behaviour.md §22, "Which quota applies", "How throttling works").
`TokenBucket` is the controller mutation quota's bucket.

Not here: where the values come from (`zkbroker.broker.security.quotas`), time sources.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

DEFAULT = "<default>"


@dataclass
class _Sample:
    last_window_ms: int
    value: float = 0.0

    def reset(self, now_ms: int) -> None:
        self.last_window_ms = now_ms
        self.value = 0.0


@dataclass
class SampledRate:
    """Kafka's `Rate` over `SampledStat`: a per-second rate of what was recorded."""

    samples: int = 11
    window_ms: int = 1000
    _samples: list[_Sample] = field(default_factory=list)
    _current: int = 0

    def record(self, value: float, now_ms: int) -> None:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        sample = self._samples[self._current]
        if now_ms - sample.last_window_ms >= self.window_ms:
            self._current = (self._current + 1) % self.samples
            if self._current >= len(self._samples):
                self._samples.append(_Sample(now_ms))
            else:
                self._samples[self._current].reset(now_ms)
            sample = self._samples[self._current]
        sample.value += value

    def _purge(self, now_ms: int) -> None:
        expire_age = self.samples * self.window_ms
        for s in self._samples:
            if now_ms - s.last_window_ms >= expire_age:
                s.reset(now_ms)

    def window_size_ms(self, now_ms: int) -> int:
        self._purge(now_ms)
        oldest = min((s.last_window_ms for s in self._samples), default=now_ms)
        elapsed = now_ms - oldest
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(elapsed, 1)

    def rate(self, now_ms: int) -> float:
        window = self.window_size_ms(now_ms)
        return sum(s.value for s in self._samples) / (window / 1000.0)


def throttle_time_ms(observed: float, bound: float, window_ms: int) -> int:
    """QuotaUtils.throttleTime: how long until the rate is back at the bound."""
    if bound <= 0:
        return window_ms
    return round((observed - bound) / bound * window_ms)


def record_and_throttle_ms(
    rate: SampledRate, value: float, bound: float, now_ms: int, max_ms: int | None = None
) -> int:
    """Sensor.record with a quota: 0 when the rate stays within `bound`, else the throttle."""
    rate.record(value, now_ms)
    observed = rate.rate(now_ms)
    if observed <= bound:
        return 0
    throttle = throttle_time_ms(observed, bound, rate.window_size_ms(now_ms))
    return throttle if max_ms is None else min(throttle, max_ms)


@dataclass(frozen=True)
class QuotaMatch:
    """The quota value that applies and the sensor it is recorded on: (user, client id) with
    "" for a level the matched entity does not name, as Kafka's metric tags."""

    bound: float
    user_tag: str
    client_tag: str


def find_quota(
    entities: Mapping[str, Mapping[str, float]], key: str, user: str, client_id: str
) -> QuotaMatch | None:
    """The first entity in Kafka's precedence that sets `key`. `entities` maps the sanitized
    entity path below /config (`users/alice/clients/app`, `clients/<default>`, ...) to its quota
    values; `user` and `client_id` are sanitized names."""
    order = (
        (f"users/{user}/clients/{client_id}", user, client_id),
        (f"users/{user}/clients/{DEFAULT}", user, client_id),
        (f"users/{user}", user, ""),
        (f"users/{DEFAULT}/clients/{client_id}", user, client_id),
        (f"users/{DEFAULT}/clients/{DEFAULT}", user, client_id),
        (f"users/{DEFAULT}", user, ""),
        (f"clients/{client_id}", "", client_id),
        (f"clients/{DEFAULT}", "", client_id),
    )
    for path, user_tag, client_tag in order:
        values = entities.get(path)
        if values is not None and key in values:
            return QuotaMatch(values[key], user_tag, client_tag)
    return None


@dataclass
class TokenBucket:
    """Kafka's `TokenBucket` stat (KIP-599, controller mutations): refills at `quota` per
    second up to a burst of `quota * samples * window`, and a record takes its value out."""

    quota: float
    burst: float
    tokens: float = 0.0
    last_ms: int = 0

    def _refill(self, now_ms: int) -> None:
        elapsed_s = max(now_ms - self.last_ms, 0) / 1000.0
        self.tokens = min(self.burst, self.tokens + self.quota * elapsed_s)
        self.last_ms = now_ms

    def tokens_at(self, now_ms: int) -> float:
        self._refill(now_ms)
        return self.tokens

    def record(self, value: float, now_ms: int) -> None:
        self._refill(now_ms)
        self.tokens -= value


def token_throttle_ms(tokens: float, quota: float) -> int:
    """ControllerMutationQuotaManager.throttleTime: the time to earn back the deficit."""
    if tokens >= 0:
        return 0
    return round(-tokens / quota * 1000) if quota > 0 else 0
