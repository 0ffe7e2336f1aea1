"""Broker registration nodes: `/brokers`, `/brokers/ids`, `/brokers/ids/<id>` (ephemeral, JSON
v1-v5) and `/brokers/seqid` (broker-id generation); docs/kafka-behaviour.md §1.2, §1.6.

`BrokerIdNode.written_version` is what each release's own broker wrote with its default IBP:
v1 before 0.9, v2 in 0.9, v3 in 0.10.0-0.10.1 (`rack` only when configured), v4 in 0.10.2-2.6,
v5 from 2.7. (Kafka's rule for a low IBP is coarser; here a release stands for a broker of that
release.) Reading follows `BrokerIdZNode.decode`: `version` and `jmx_port` required, v1's
host/port as one PLAINTEXT endpoint, v2+ `endpoints` mapped through
`listener_security_protocol_map` when present; `timestamp` is read leniently (-1).

Not here: the `checkedEphemeralCreate` dance (create + set, czxid = broker epoch), done by
`ZkStore.register_broker`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from zkbroker.zk_layout import codec_json as cj
from zkbroker.zk_layout.errors import ZnodeFormatError
from zkbroker.zk_layout.nodes.base import EmptyNode, NodeKind, ZNode, check_version
from zkbroker.zk_layout.release import Release, release_at_least

SECURITY_PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

# Same shape Kafka's EndPoint accepts: optional [..] around the host, host may be empty.
_ENDPOINT: Final = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$")


@dataclass(frozen=True)
class Endpoint:
    listener: str
    host: str | None
    port: int
    security_protocol: str

    def connection_string(self) -> str:
        if self.host is None:
            host_port = f":{self.port}"
        elif ":" in self.host:
            host_port = f"[{self.host}]:{self.port}"
        else:
            host_port = f"{self.host}:{self.port}"
        return f"{self.listener}://{host_port}"

    @classmethod
    def plaintext(cls, host: str | None, port: int) -> Endpoint:
        return cls("PLAINTEXT", host, port, "PLAINTEXT")


@dataclass(frozen=True)
class BrokerInfo:
    """Content of ``/brokers/ids/<id>``.

    ``host``/``port`` are the top-level compatibility fields as stored; ``encode`` always derives
    them from the first PLAINTEXT endpoint (null/-1 without one), as Kafka does. ``version`` is the
    format version the value was decoded from (None for a value built in memory; ``encode``
    writes ``written_version(release)`` regardless). ``features`` maps a feature name to its
    supported range, e.g. ``{"metadata.version": {"min_version": 1, "max_version": 7}}``.
    """

    broker_id: int
    host: str | None
    port: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None
    jmx_port: int = -1
    timestamp_ms: int = -1
    features: dict[str, dict[str, int]] = field(default_factory=dict)
    version: int | None = None

    @classmethod
    def create(
        cls,
        broker_id: int,
        endpoints: Iterable[Endpoint],
        *,
        rack: str | None = None,
        jmx_port: int = -1,
        timestamp_ms: int | None = None,
        features: Mapping[str, Mapping[str, int]] | None = None,
    ) -> BrokerInfo:
        """Build a registration the way a starting broker does (timestamp = now)."""
        eps = tuple(endpoints)
        host, port = _compat_host_port(eps)
        return cls(
            broker_id=broker_id,
            host=host,
            port=port,
            endpoints=eps,
            rack=rack,
            jmx_port=jmx_port,
            timestamp_ms=time.time_ns() // 1_000_000 if timestamp_ms is None else timestamp_ms,
            features={k: dict(v) for k, v in (features or {}).items()},
        )


def _compat_host_port(endpoints: Iterable[Endpoint]) -> tuple[str | None, int]:
    for ep in endpoints:
        if ep.security_protocol == "PLAINTEXT":
            return ep.host, ep.port
    return None, -1


def parse_endpoint(text: str, protocol_map: Mapping[str, str] | None, where: str) -> Endpoint:
    """``LISTENER://host:port`` -> Endpoint (Kafka's ``EndPoint.createEndPoint``)."""
    m = _ENDPOINT.match(text)
    if not m:
        raise ZnodeFormatError(where, f"unable to parse endpoint {text!r}")
    listener = m.group(1).upper()
    host = m.group(2) or None
    port = cj.parse_decimal_int(m.group(3), where, f"port of endpoint {text!r}")
    if protocol_map is not None:
        if listener not in protocol_map:
            raise ZnodeFormatError(
                where, f"listener {listener} of endpoint {text!r} is not in the security map"
            )
        protocol = protocol_map[listener]
    else:
        protocol = listener
    if protocol not in SECURITY_PROTOCOLS:
        raise ZnodeFormatError(where, f"unknown security protocol {protocol!r} for {text!r}")
    return Endpoint(listener, host, port, protocol)


class BrokersNode(EmptyNode, name="brokers"):
    """``/brokers``: parent of the registrations, the topics and the id sequence."""


class BrokerIdsNode(EmptyNode, parent=BrokersNode, name="ids"):
    """Parent of the broker registrations; the controller watches its children."""


class BrokerIdNode(ZNode[BrokerInfo], parent=BrokerIdsNode, name="{id}"):
    """``/brokers/ids/<id>``: ``path(broker_id)``."""

    FORMAT_VERSIONS = (1, 2, 3, 4, 5)
    KIND = NodeKind.EPHEMERAL

    @staticmethod
    def broker_id_from_child(name: str) -> int | None:
        """Child name under ``/brokers/ids`` -> broker id (None for anything else)."""
        try:
            return cj.parse_decimal_int(name, BrokerIdsNode.path(), "broker id")
        except ZnodeFormatError:
            return None

    @classmethod
    def written_version(cls, release: Release) -> int:
        if release_at_least(release, (2, 7)):
            return 5
        if release_at_least(release, (0, 10, 2)):
            return 4
        if release_at_least(release, (0, 10)):
            return 3
        if release_at_least(release, (0, 9)):
            return 2
        return 1

    @classmethod
    def encode(cls, value: BrokerInfo, release: Release) -> bytes:
        version = cls.written_version(release)
        host, port = _compat_host_port(value.endpoints)
        doc: dict[str, Any] = {
            "version": version,
            "host": host,
            "port": port,
            "jmx_port": value.jmx_port,
            "timestamp": str(value.timestamp_ms),
        }
        if version >= 2:
            doc["endpoints"] = [ep.connection_string() for ep in value.endpoints]
        if version >= 4:
            doc["listener_security_protocol_map"] = {
                ep.listener: ep.security_protocol for ep in value.endpoints
            }
        if version >= 3 and value.rack is not None:
            doc["rack"] = value.rack
        if version >= 5:
            doc["features"] = {k: dict(v) for k, v in value.features.items()}
        return cj.dumps(doc)

    @classmethod
    def decode(cls, data: bytes, broker_id: int | None = None) -> BrokerInfo:
        """Decode a registration. The id is not part of the JSON: pass it (``decode_at`` does);
        without it ``broker_id`` is -1."""
        where = cls.PATTERN if broker_id is None else cls.path(broker_id)
        doc = cj.parse_object(data, where)
        version = cj.get_int(doc, "version", where)
        check_version(where, version, cls.FORMAT_VERSIONS)
        jmx_port = cj.get_int(doc, "jmx_port", where)
        if version == 1:
            host: str | None = cj.get_str(doc, "host", where)
            port = cj.get_int(doc, "port", where)
            endpoints: tuple[Endpoint, ...] = (Endpoint.plaintext(host, port),)
        else:
            host = cj.get_opt_str(doc, "host", where)
            port = cj.get_opt_int(doc, "port", where, -1)
            protocol_map = _protocol_map(doc, where)
            endpoints = tuple(
                parse_endpoint(cj.check_str(e, where, "an endpoint"), protocol_map, where)
                for e in cj.get_list(doc, "endpoints", where)
            )
        return BrokerInfo(
            broker_id=-1 if broker_id is None else broker_id,
            host=host,
            port=port,
            endpoints=endpoints,
            rack=cj.get_opt_str(doc, "rack", where),
            jmx_port=jmx_port,
            timestamp_ms=cj.lenient_timestamp(doc.get("timestamp")),
            features=_broker_features(doc, where),
            version=version,
        )

    @classmethod
    def decode_at(cls, data: bytes, *path_args: Any) -> BrokerInfo:
        (broker_id,) = path_args
        return cls.decode(data, broker_id)


def _protocol_map(doc: Mapping[str, Any], where: str) -> dict[str, str] | None:
    raw = doc.get("listener_security_protocol_map")
    if raw is None:
        return None
    obj = cj.as_object(raw, where, "'listener_security_protocol_map'")
    return {
        k.upper(): cj.check_str(v, where, f"security protocol of listener {k!r}").upper()
        for k, v in obj.items()
    }


def _broker_features(doc: Mapping[str, Any], where: str) -> dict[str, dict[str, int]]:
    raw = doc.get("features")
    if raw is None:
        return {}
    obj = cj.as_object(raw, where, "'features'")
    out: dict[str, dict[str, int]] = {}
    for name, rng in obj.items():
        levels = cj.as_object(rng, where, f"feature {name!r}")
        out[name] = {
            label: cj.check_int(v, where, f"{label!r} of feature {name!r}")
            for label, v in levels.items()
        }
    return out


class BrokerSeqIdNode(EmptyNode, parent=BrokersNode, name="seqid"):
    """``/brokers/seqid``: empty data; its *data version* is the broker-id sequence.

    Kafka generates an id by setting the data to empty with version -1 and adding
    ``reserved.broker.max.id`` (default 1000) to the new data version (``ZkStore``
    ``next_broker_sequence_id`` does that).
    """

    DEFAULT_RESERVED_BROKER_MAX_ID: Final = 1000
