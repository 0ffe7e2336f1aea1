"""Settings of a zkbroker process: what the command line and the Python API configure.

One frozen dataclass, validated on construction, shared read-only by every broker of the
process. Parsing the command line lives in `broker.cli`; this module only knows values.

Deliberately not here: Kafka's full server.properties (only the knobs zkbroker emulates
exist), per-broker overrides other than racks, and anything that changes at run time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from broker.protocol.releases import DEFAULT_RELEASE, RELEASES, Release, release_name

# Kafka's socket.request.max.bytes default.
DEFAULT_MAX_REQUEST_BYTES = 104_857_600
DEFAULT_LISTENER = "PLAINTEXT"


@dataclass(frozen=True)
class Settings:
    """Everything a zkbroker process is configured with."""

    broker_ids: tuple[int, ...] = (0, 1, 2)
    host: str = "127.0.0.1"
    # The host written into /brokers/ids and answered in Metadata; defaults to `host`.
    advertised_host: str | None = None
    # Port of the first broker; broker i listens on port + i. 0 = any free port for each.
    port: int = 9092
    racks: tuple[str | None, ...] = ()
    # host:port[,host:port][/chroot] of an existing ensemble; None = start an embedded one.
    zookeeper: str | None = None
    kafka_version: Release = DEFAULT_RELEASE
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    listener_name: str = DEFAULT_LISTENER
    zk_session_timeout_s: float = 18.0
    # Kafka's delete.topic.enable, auto.create.topics.enable, num.partitions and
    # default.replication.factor.
    delete_topic_enable: bool = True
    auto_create_topics: bool = True
    num_partitions: int = 1
    default_replication_factor: int = 1
    log_level: str = "info"
    log_format: str = "console"
    extra: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.broker_ids:
            raise ValueError("at least one broker id is needed")
        if len(set(self.broker_ids)) != len(self.broker_ids):
            raise ValueError(f"broker ids must be distinct, got {list(self.broker_ids)}")
        if any(b < 0 for b in self.broker_ids):
            raise ValueError(f"broker ids must be >= 0, got {list(self.broker_ids)}")
        if self.racks and len(self.racks) != len(self.broker_ids):
            raise ValueError(
                f"--racks names {len(self.racks)} racks for {len(self.broker_ids)} brokers; "
                "give one rack per broker"
            )
        if not 0 <= self.port <= 65535 or (
            self.port and self.port + len(self.broker_ids) - 1 > 65535
        ):
            raise ValueError(f"port {self.port} leaves no room for {len(self.broker_ids)} brokers")
        if self.num_partitions < 1 or self.default_replication_factor < 1:
            raise ValueError("--num-partitions and --default-replication-factor must be >= 1")
        if self.max_request_bytes <= 0:
            raise ValueError("--max-request-bytes must be positive")
        if self.kafka_version not in RELEASES:
            raise ValueError(f"unknown Kafka release {self.kafka_version!r}")
        if self.log_format not in ("console", "json"):
            raise ValueError("--log-format is console or json")

    @property
    def release_name(self) -> str:
        return release_name(self.kafka_version)

    @property
    def public_host(self) -> str:
        return self.advertised_host or self.host

    def rack_of(self, broker_id: int) -> str | None:
        if not self.racks:
            return None
        return self.racks[self.broker_ids.index(broker_id)]

    def port_of(self, broker_id: int) -> int:
        if self.port == 0:
            return 0
        return self.port + self.broker_ids.index(broker_id)
