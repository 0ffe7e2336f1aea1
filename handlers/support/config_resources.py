"""What the three config APIs share: resource types, Kafka's resource naming in messages, the
per-resource error, and the broker-id rules of each release.

* `ResourceType` ids (ConfigResource.Type) and `type_name`, which renders an id as Java's
  `ConfigResource.Type.forId(id)` does in messages (unknown ids and, before 2.4,
  BROKER_LOGGER print as UNKNOWN).
* `resource_text`: `ConfigResource(type=TOPIC, name='t')`, the prefix Kafka puts in front of a
  ConfigException's message ("Invalid config value for resource ...").
* `ResourceError`: one resource's answer (code + message); handlers raise it and catch it per
  resource, so one bad resource never fails its neighbours.
* `entries_filtered`: DescribeConfigs' `configuration_keys` filter.

Deliberately not here: the handlers' flows (`describe_configs`, `config_alter`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from enum import IntEnum

from zkbroker.broker.protocol import error_codes
from zkbroker.zk_layout.release import Release, normalize_release, release_at_least

_JAVA_INT = re.compile(r"[+-]?\d+")  # \d: any Unicode decimal digit, as Character.digit


class ResourceType(IntEnum):
    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16


def handled_types(release: Release) -> frozenset[int]:
    """The resource types DescribeConfigs and IncrementalAlterConfigs handle: TOPIC, BROKER
    and, from 2.4 (KIP-412), BROKER_LOGGER."""
    types = {ResourceType.TOPIC, ResourceType.BROKER}
    if release_at_least(release, (2, 4)):
        types.add(ResourceType.BROKER_LOGGER)
    return frozenset(int(t) for t in types)


def type_name(type_id: int, release: Release) -> str:
    r = normalize_release(release)
    known = {2: "TOPIC", 4: "BROKER"}
    if r >= (2, 4):
        known[8] = "BROKER_LOGGER"
    if r >= (3, 7):
        known[16] = "CLIENT_METRICS"
    return known.get(type_id, "UNKNOWN")


def resource_text(type_id: int, name: str, release: Release) -> str:
    if normalize_release(release) < (2,):
        # AdminManager of 0.11-1.1 printed its own Resource class, with a stray brace.
        return f"Resource(type={type_name(type_id, release)}, name='{name}'}}"
    return f"ConfigResource(type={type_name(type_id, release)}, name='{name}')"


class ResourceError(Exception):
    """The error one config resource is answered with (message None = Kafka's null)."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @classmethod
    def invalid_request(cls, message: str) -> ResourceError:
        return cls(error_codes.INVALID_REQUEST, message)


class WholeRequestError(Exception):
    """A failure that answers every resource of the request with the same error
    (Kafka throws before building per-resource results)."""

    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def parse_broker_id(name: str, *, node_wording: bool = False) -> int:
    """A resource name as a broker id, as Java's Integer.parseInt reads it (an optional sign,
    then decimal digits of any script, within int range), or INVALID_REQUEST."""
    if _JAVA_INT.fullmatch(name) and -(2**31) <= (value := int(name)) < 2**31:
        return value
    word = "Node" if node_wording else "Broker"
    raise ResourceError.invalid_request(f"{word} id must be an integer, but it is: {name}")


def entries_filtered(names: Iterable[str], keys: Sequence[str] | None) -> list[str]:
    """DescribeConfigs keeps every entry when `configuration_keys` is null or empty, else
    only the listed names (unknown ones are silently dropped)."""
    if not keys:
        return list(names)
    wanted = set(keys)
    return [n for n in names if n in wanted]
