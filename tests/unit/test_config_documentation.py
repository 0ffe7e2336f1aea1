"""Our own config documentation (handlers/config_documentation.py): coverage of the topic catalog
and of the broker configs, the shape of every text, listener-scoped lookups, and a guard that the
texts do not reuse runs of words from Kafka's documentation strings."""

from __future__ import annotations

import re
from types import MappingProxyType

import pytest

from zkbroker.broker.rules.config_catalog import TOPIC_CONFIG_KEYS
from zkbroker.broker.rules.config_documentation import (
    BROKER_CONFIG_DOCS,
    broker_config_documentation,
    topic_config_documentation,
)
from zkbroker.broker.rules.topic_config_docs import TOPIC_CONFIG_DOCS

ALL_DOCS = [
    *(("topic", name, doc) for name, doc in TOPIC_CONFIG_DOCS.items()),
    *(("broker", name, doc) for name, doc in BROKER_CONFIG_DOCS.items()),
]

# A sample of broker configs from both ends of the covered range: 2.8.0-only keys (removed by 3.9),
# keys present in both, and 3.9-only keys (KRaft, new group coordinator, tiered storage, OAuth).
BROKER_SAMPLE = (
    "port",
    "host.name",
    "advertised.host.name",
    "quota.producer.default",
    "zookeeper.sync.time.ms",
    "zookeeper.connect",
    "broker.id",
    "listeners",
    "log.retention.hours",
    "log.cleaner.dedupe.buffer.size",
    "offsets.topic.replication.factor",
    "transaction.state.log.min.isr",
    "inter.broker.protocol.version",
    "ssl.keystore.location",
    "sasl.jaas.config",
    "password.encoder.secret",
    "delegation.token.master.key",
    "controller.quorum.voters",
    "process.roles",
    "node.id",
    "metadata.log.dir",
    "controller.quorum.bootstrap.servers",
    "eligible.leader.replicas.enable",
    "group.coordinator.rebalance.protocols",
    "group.consumer.assignors",
    "group.share.record.lock.duration.ms",
    "remote.log.storage.system.enable",
    "remote.log.manager.copier.thread.pool.size",
    "log.local.retention.ms",
    "sasl.oauthbearer.jwks.endpoint.url",
    "telemetry.max.bytes",
    "compression.zstd.level",
    "log.message.timestamp.after.max.ms",
    "producer.id.expiration.ms",
    "unstable.api.versions.enable",
    "leader.replication.throttled.rate",
)

# Kafka's own documentation strings (HTML removed; some cut after a few sentences) for a handful
# of keys, kept here only so the guard below can show that our texts do not reuse them.
KAFKA_DOC_SAMPLES = {
    "segment.ms": (
        "This configuration controls the period of time after which Kafka will force the log to "
        "roll even if the segment file isn't full to ensure that retention can delete or compact "
        "old data."
    ),
    "segment.jitter.ms": (
        "The maximum random jitter subtracted from the scheduled segment roll time to avoid "
        "thundering herds of segment rolling"
    ),
    "retention.ms": (
        "This configuration controls the maximum time we will retain a log before we will discard "
        'old log segments to free up space if we are using the "delete" retention policy. This '
        "represents an SLA on how soon consumers must read their data. If set to -1, no time limit "
        "is applied."
    ),
    "cleanup.policy": (
        'This config designates the retention policy to use on log segments. The "delete" policy '
        "(which is the default) will discard old segments when their retention time or size limit "
        'has been reached. The "compact" policy will enable log compaction, which retains the '
        "latest value for each key."
    ),
    "delete.retention.ms": (
        "The amount of time to retain delete tombstone markers for log compacted topics. This "
        "setting also gives a bound on the time in which a consumer must complete a read if they "
        "begin from offset 0 to ensure that they get a valid snapshot of the final stage "
        "(otherwise delete tombstones may be collected before they complete their scan)."
    ),
    "min.insync.replicas": (
        'When a producer sets acks to "all" (or "-1"), this configuration specifies the minimum '
        "number of replicas that must acknowledge a write for the write to be considered "
        "successful. If this minimum cannot be met, then the producer will raise an exception "
        "(either NotEnoughReplicas or NotEnoughReplicasAfterAppend)."
    ),
    "max.message.bytes": (
        "The largest record batch size allowed by Kafka (after compression if compression is "
        "enabled). If this is increased and there are consumers older than 0.10.2, the consumers' "
        "fetch size must also be increased so that they can fetch record batches this large."
    ),
    "num.io.threads": (
        "The number of threads that the server uses for processing requests, which may include "
        "disk I/O"
    ),
    "log.retention.check.interval.ms": (
        "The frequency in milliseconds that the log cleaner checks whether any log is eligible for "
        "deletion"
    ),
    "replica.lag.time.max.ms": (
        "If a follower hasn't sent any fetch requests or hasn't consumed up to the leaders log end "
        "offset for at least this time, the leader will remove the follower from isr"
    ),
}

RUN_LENGTH = 8


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9_'.-]+", text.lower().replace("(", " ").replace(")", " "))


def _runs(text: str, n: int) -> set[tuple[str, ...]]:
    words = [w.strip(".,;:'\"") for w in _words(text)]
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def test_tables_are_read_only() -> None:
    assert isinstance(TOPIC_CONFIG_DOCS, MappingProxyType)
    assert isinstance(BROKER_CONFIG_DOCS, MappingProxyType)


def test_every_catalog_topic_key_has_documentation() -> None:
    catalog = {key.name for key in TOPIC_CONFIG_KEYS}
    missing = sorted(catalog - TOPIC_CONFIG_DOCS.keys())
    assert missing == []
    for name in catalog:
        assert topic_config_documentation(name) == TOPIC_CONFIG_DOCS[name]


def test_no_topic_documentation_for_names_outside_the_catalog() -> None:
    catalog = {key.name for key in TOPIC_CONFIG_KEYS}
    assert sorted(TOPIC_CONFIG_DOCS.keys() - catalog) == []


def test_broker_sample_and_topic_synonyms_have_documentation() -> None:
    topic_synonyms = {b for k in TOPIC_CONFIG_KEYS for b in k.broker_synonyms}
    wanted = set(BROKER_SAMPLE) | topic_synonyms
    assert sorted(wanted - BROKER_CONFIG_DOCS.keys()) == []
    for name in wanted:
        assert broker_config_documentation(name) == BROKER_CONFIG_DOCS[name]


def test_broker_table_size() -> None:
    # 232 KafkaConfig keys in 2.8.0 and 331 in 3.9 (with the 3 dynamic throttle rates): 338 in all.
    assert len(BROKER_CONFIG_DOCS) == 338
    assert len(TOPIC_CONFIG_DOCS) == 36


@pytest.mark.parametrize(
    ("kind", "name", "doc"), ALL_DOCS, ids=[f"{k}:{n}" for k, n, _ in ALL_DOCS]
)
def test_doc_shape(kind: str, name: str, doc: str) -> None:
    assert doc, (kind, name)
    assert doc == doc.strip()
    assert "\n" not in doc and "\r" not in doc and "\t" not in doc
    assert doc.endswith(".")
    assert len(doc) < 300
    assert "  " not in doc
    assert "<" not in doc and ">" not in doc  # no HTML markup
    assert doc[0].isupper()


def test_listener_prefixed_broker_names() -> None:
    base = BROKER_CONFIG_DOCS["ssl.keystore.location"]
    doc = broker_config_documentation("listener.name.internal.ssl.keystore.location")
    assert doc is not None
    assert doc.startswith(base)
    assert "internal" in doc[len(base) :]
    assert doc.endswith(".")
    assert "\n" not in doc

    doc = broker_config_documentation("listener.name.EXTERNAL.max.connections")
    assert doc is not None
    assert doc.startswith(BROKER_CONFIG_DOCS["max.connections"])
    assert "EXTERNAL" in doc


def test_listener_and_mechanism_prefixed_sasl_names() -> None:
    base = BROKER_CONFIG_DOCS["sasl.jaas.config"]
    doc = broker_config_documentation("listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config")
    assert doc is not None
    assert doc.startswith(base)
    note = doc[len(base) :]
    assert "sasl_ssl" in note and "scram-sha-256" in note
    # Plain listener-scoped SASL key (no mechanism) still resolves to the base key.
    doc = broker_config_documentation("listener.name.sasl_ssl.sasl.enabled.mechanisms")
    assert doc is not None and doc.startswith(BROKER_CONFIG_DOCS["sasl.enabled.mechanisms"])


@pytest.mark.parametrize(
    "name",
    [
        "no.such.config",
        "",
        "listener.name.",
        "listener.name.internal",
        "listener.name.internal.",
        "listener.name..ssl.keystore.location",
        "listener.name.internal.no.such.config",
        "listener.name.internal.plain.no.such.sasl.key",
        "listener.name.internal.plain.ssl.keystore.location",  # mechanism form is SASL-only
        "listener.name.a.listener.name.b.ssl.keystore.location",
        "retention.ms",  # a topic config, not a broker config
        "SSL.KEYSTORE.LOCATION",  # names are case-sensitive
    ],
)
def test_unknown_broker_names(name: str) -> None:
    assert broker_config_documentation(name) is None


@pytest.mark.parametrize(
    "name",
    [
        "no.such.config",
        "",
        "log.retention.ms",
        "listener.name.internal.retention.ms",
        "RETENTION.MS",
    ],
)
def test_unknown_topic_names(name: str) -> None:
    assert topic_config_documentation(name) is None


def test_samples_are_long_enough_to_guard() -> None:
    for name, sample in KAFKA_DOC_SAMPLES.items():
        assert len(_words(sample)) >= RUN_LENGTH, name


def test_texts_are_our_own() -> None:
    """No text equals, or shares a run of 8 consecutive words with, a sampled Kafka doc string."""
    kafka_runs: set[tuple[str, ...]] = set()
    for sample in KAFKA_DOC_SAMPLES.values():
        kafka_runs |= _runs(sample, RUN_LENGTH)
    kafka_texts = {" ".join(_words(sample)) for sample in KAFKA_DOC_SAMPLES.values()}
    offenders = []
    for kind, name, doc in ALL_DOCS:
        if " ".join(_words(doc)) in kafka_texts or _runs(doc, RUN_LENGTH) & kafka_runs:
            offenders.append(f"{kind}:{name}")
    assert offenders == []


def test_guard_detects_a_copied_run() -> None:
    copied = "Note: " + KAFKA_DOC_SAMPLES["segment.ms"].split(" to ensure")[0] + "."
    assert _runs(copied, RUN_LENGTH) & _runs(KAFKA_DOC_SAMPLES["segment.ms"], RUN_LENGTH)
