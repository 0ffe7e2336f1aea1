"""Config names of equal String.hashCode in a message Kafka renders from a Scala Set: the
cluster-default broker resource refusing listener overrides ("broker id must be specified").

Kafka's answer lists them as Scala 2.13's HashSet iterates: names of equal hash last in their
collision node, in insertion order. Once a RecursionError (UNKNOWN_SERVER_ERROR and an ERROR
logged)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.log_events import capture_events
from zkbroker import Cluster
from zkbroker.broker.protocol import error_codes as ec
from zkbroker.broker.protocol.messages.alter_configs import (
    AlterableConfig,
    AlterConfigsRequest,
    AlterConfigsResource,
)
from zkbroker.broker.protocol.messages.incremental_alter_configs import (
    AlterableConfig as IncAlterableConfig,
)
from zkbroker.broker.protocol.messages.incremental_alter_configs import (
    AlterConfigsResource as IncResource,
)
from zkbroker.broker.protocol.messages.incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
)
from zkbroker.broker.rules.jvm_collections import java_string_hash
from zkbroker.broker.toolkit.wire import WireClient

BROKER, SET = 4, 0

# Listener overrides are per broker: refused at the cluster default. The ".BB" and ".Aa"
# names share String.hashCode ("Aa" and "BB" do, and so does any shared prefix before them).
NAMES = [f"listener.name.x.{n}" for n in ("BB", "c", "Aa", "d", "e")]

# Properties (16 bins, no resize) lists e, d, c, BB, Aa, the Set gets them in that order.
# Improved hashes' root slots: d 6, c 9, e 30, each alone, listed first by slot; BB and Aa
# share slot 2 and every slot below it: one collision node, BB first as added.
MESSAGE = (
    "Cannot update these configs at default cluster level, broker id must be specified: "
    "HashSet(listener.name.x.d, listener.name.x.c, listener.name.x.e, listener.name.x.BB, "
    "listener.name.x.Aa)"
)
PREFIX = "Invalid config value for resource ConfigResource(type=BROKER, name=''): "


def _alter(client: WireClient) -> Any:
    return client.request(
        1,
        AlterConfigsRequest(
            resources=[
                AlterConfigsResource(
                    resource_type=BROKER,
                    resource_name="",
                    configs=[AlterableConfig(name=n, value="1") for n in NAMES],
                )
            ],
            validate_only=False,
        ),
    ).responses[0]


def _incremental(client: WireClient) -> Any:
    return client.request(
        1,
        IncrementalAlterConfigsRequest(
            resources=[
                IncResource(
                    resource_type=BROKER,
                    resource_name="",
                    configs=[
                        IncAlterableConfig(name=n, config_operation=SET, value="1") for n in NAMES
                    ],
                )
            ],
            validate_only=False,
        ),
    ).responses[0]


@pytest.mark.parametrize(
    "message",
    [
        # ZkAdminManager wraps the ConfigException in an InvalidRequestException, with the
        # resource; 3.2+ check it first in ConfigAdminManager.preprocess, which rethrows its
        # bare message as one.
        pytest.param(PREFIX + MESSAGE, marks=pytest.mark.kafka_version("2.8"), id="2.8"),
        pytest.param(MESSAGE, marks=pytest.mark.kafka_version("3.9"), id="3.9"),
    ],
)
def test_colliding_names_at_the_cluster_default(cluster: Cluster, kazoo: Any, message: str) -> None:
    assert java_string_hash(NAMES[0]) == java_string_hash(NAMES[2])
    node = cluster.engine.brokers[0]
    with capture_events(logging.ERROR) as errors, WireClient(node.host, node.port) as client:
        alter = _alter(client)
        incremental = _incremental(client)
    assert (alter.error_code, alter.error_message) == (ec.INVALID_REQUEST, message)
    assert (incremental.error_code, incremental.error_message) == (ec.INVALID_REQUEST, message)
    assert errors == []
    assert not kazoo.exists("/config/brokers/<default>")
