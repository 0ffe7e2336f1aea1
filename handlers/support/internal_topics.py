"""Kafka's internal topics as a broker asks for their creation: `__consumer_offsets` and
`__transaction_state`, with the partition count, replication factor and topic configs from the
broker's own configs (`offsets.topic.*`, `transaction.state.log.*`) and the coordinators' fixed
topic configs (Kafka 2.8-3.9 `AutoTopicCreationManager.creatableTopic`,
`GroupCoordinator.offsetsTopicConfigs`, `TransactionLog.transactionTopicConfigs`).

One place for both creators, FindCoordinator (`zkbroker.handlers.find_coordinator`) and Metadata's
auto-creation (`zkbroker.handlers.metadata`), so the two never ask for different topics.

Deliberately not here: cutting the replication factor to the live brokers (a per-release rule
of the FindCoordinator path) and the creation itself.
"""

from __future__ import annotations

from zkbroker.broker.protocol.messages.create_topics import CreatableTopic, CreatableTopicConfig
from zkbroker.handlers.context import RequestContext

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_TOPIC = "__transaction_state"
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_TOPIC})


def internal_topic_spec(ctx: RequestContext, name: str) -> CreatableTopic | None:
    """The creation Kafka asks for when `name` is an internal topic; None for any other."""
    if name == OFFSETS_TOPIC:
        return offsets_topic_spec(ctx)
    if name == TRANSACTION_TOPIC:
        return transaction_topic_spec(ctx)
    return None


def offsets_topic_spec(ctx: RequestContext) -> CreatableTopic:
    """`__consumer_offsets`: `offsets.topic.*`, compacted, compression as the producer sent."""
    return _spec(
        ctx,
        OFFSETS_TOPIC,
        "offsets.topic",
        {"cleanup.policy": "compact", "compression.type": "producer"},
    )


def transaction_topic_spec(ctx: RequestContext) -> CreatableTopic:
    """`__transaction_state`: `transaction.state.log.*`, compacted, uncompressed, never led
    by an unclean replica, `min.insync.replicas` from `transaction.state.log.min.isr`."""
    configured = ctx.broker.broker_config.configured
    return _spec(
        ctx,
        TRANSACTION_TOPIC,
        "transaction.state.log",
        {
            "unclean.leader.election.enable": "false",
            "compression.type": "uncompressed",
            "cleanup.policy": "compact",
            "min.insync.replicas": configured("transaction.state.log.min.isr") or "2",
        },
    )


def _spec(ctx: RequestContext, name: str, prefix: str, configs: dict[str, str]) -> CreatableTopic:
    # Kafka's defaults: 50 partitions, replication factor 3, 100 MiB segments.
    configured = ctx.broker.broker_config.configured
    segment = configured(f"{prefix}.segment.bytes") or "104857600"
    return CreatableTopic(
        name=name,
        num_partitions=int(configured(f"{prefix}.num.partitions") or 50),
        replication_factor=int(configured(f"{prefix}.replication.factor") or 3),
        configs=[
            CreatableTopicConfig(name=k, value=v)
            for k, v in {**configs, "segment.bytes": segment}.items()
        ],
    )
