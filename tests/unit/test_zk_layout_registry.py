"""The registry of znode classes and the composition of their paths (issue 33, item 3).

Every concrete class registers itself when it is defined, so ``ALL_NODE_CLASSES`` (and the
contract tests parametrized over it) cannot miss one; ``__all__`` is a plain list, checked here
against every class of every module of the package. Each path is one segment below its parent's,
so a class's path starts with its parent's.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Any

import pytest

from zkbroker.zk_layout import nodes
from zkbroker.zk_layout.nodes import ALL_NODE_CLASSES
from zkbroker.zk_layout.nodes.base import EmptyNode, NodeKind, SequenceMixin, ZNode, node_classes


def _classes_defined_in_the_package() -> list[type[ZNode[Any]]]:
    found: list[type[ZNode[Any]]] = []
    for info in pkgutil.iter_modules(nodes.__path__, f"{nodes.__name__}."):
        module = importlib.import_module(info.name)
        found.extend(
            obj
            for obj in vars(module).values()
            if inspect.isclass(obj)
            and issubclass(obj, ZNode)
            and obj.__module__ == module.__name__
            and not obj.ABSTRACT
        )
    return found


def test_every_class_of_the_package_is_registered_and_exported() -> None:
    defined = _classes_defined_in_the_package()
    assert len(defined) == len(ALL_NODE_CLASSES)
    assert set(defined) == set(ALL_NODE_CLASSES)
    for node in defined:
        assert node.__name__ in nodes.__all__, node
        assert getattr(nodes, node.__name__) is node


def test_all_node_classes_is_the_registry() -> None:
    assert node_classes() == ALL_NODE_CLASSES
    assert len(set(ALL_NODE_CLASSES)) == len(ALL_NODE_CLASSES)
    assert not any(node.ABSTRACT for node in ALL_NODE_CLASSES)
    assert EmptyNode.ABSTRACT and ZNode.ABSTRACT
    assert EmptyNode not in ALL_NODE_CLASSES


def test_the_delegation_token_nodes_are_checked_too() -> None:
    names = {node.__name__ for node in ALL_NODE_CLASSES}
    assert {
        "DelegationTokenAuthNode",
        "DelegationTokensNode",
        "DelegationTokenChangesNode",
        "DelegationTokenInfoNode",
        "DelegationTokenChangeNode",
    } <= names


def test_all_names_exist() -> None:
    for name in nodes.__all__:
        assert hasattr(nodes, name), name
    assert len(set(nodes.__all__)) == len(nodes.__all__)


# Every class's pattern, as Kafka (or zkbroker, under /zkbroker) names the path.
PATTERNS = {
    "AclChangeNode": "/kafka-acl-changes/acl_changes_<seq>",
    "AclNode": "/kafka-acl[-extended/<pattern>]/<ResourceType>/<name>",
    "AdminNode": "/admin",
    "BrokerControlNode": "/zkbroker/brokers/<id>",
    "BrokerIdNode": "/brokers/ids/<id>",
    "BrokerIdsNode": "/brokers/ids",
    "BrokerLeaseNode": "/zkbroker/leases/<id>",
    "BrokerLeasesNode": "/zkbroker/leases",
    "BrokerOwnerNode": "/zkbroker/brokers/<id>/owner",
    "BrokerSeqIdNode": "/brokers/seqid",
    "BrokersNode": "/brokers",
    "ClusterIdNode": "/cluster/id",
    "ClusterNode": "/cluster",
    "ConfigChangeNotificationNode": "/config/changes/config_change_<seq>",
    "ConfigChangesNode": "/config/changes",
    "ConfigEntityNode": "/config/<type>/<name>",
    "ConfigEntityTypeNode": "/config/<type>",
    "ConfigNode": "/config",
    "ConsumerGroupNode": "/consumers/<group>",
    "ConsumerIdNode": "/consumers/<group>/ids/<consumer>",
    "ConsumerIdsNode": "/consumers/<group>/ids",
    "ConsumerOffsetNode": "/consumers/<group>/offsets/<topic>/<partition>",
    "ConsumerOffsetsNode": "/consumers/<group>/offsets",
    "ConsumerOffsetsTopicNode": "/consumers/<group>/offsets/<topic>",
    "ConsumerOwnerNode": "/consumers/<group>/owners/<topic>/<partition>",
    "ConsumerOwnersNode": "/consumers/<group>/owners",
    "ConsumerOwnersTopicNode": "/consumers/<group>/owners/<topic>",
    "ConsumersNode": "/consumers",
    "ControllerEpochNode": "/controller_epoch",
    "ControllerNode": "/controller",
    "DelegationTokenAuthNode": "/delegation_token",
    "DelegationTokenChangeNode": "/delegation_token/token_changes/token_change_<seq>",
    "DelegationTokenChangesNode": "/delegation_token/token_changes",
    "DelegationTokenInfoNode": "/delegation_token/tokens/<tokenId>",
    "DelegationTokensNode": "/delegation_token/tokens",
    "DeleteTopicMarkerNode": "/admin/delete_topics/<topic>",
    "DeleteTopicsNode": "/admin/delete_topics",
    "ExtendedAclChangeNode": "/kafka-acl-extended-changes/acl_changes_<seq>",
    "ExtendedAclChangesNode": "/kafka-acl-extended-changes",
    "FaultNode": "/zkbroker/faults/fault-<seq>",
    "FaultsNode": "/zkbroker/faults",
    "FeatureNode": "/feature",
    "IsrChangeNotificationNode": "/isr_change_notification/isr_change_<seq>",
    "IsrChangeNotificationsNode": "/isr_change_notification",
    "LiteralAclChangesNode": "/kafka-acl-changes",
    "LogDirEventNotificationNode": "/log_dir_event_notification/log_dir_event_<seq>",
    "LogDirEventNotificationsNode": "/log_dir_event_notification",
    "PartitionStateNode": "/brokers/topics/<topic>/partitions/<partition>/state",
    "PreferredReplicaElectionNode": "/admin/preferred_replica_election",
    "ProducerIdBlockNode": "/latest_producer_id_block",
    "ReassignPartitionsNode": "/admin/reassign_partitions",
    "TopicNode": "/brokers/topics/<topic>",
    "TopicPartitionNode": "/brokers/topics/<topic>/partitions/<partition>",
    "TopicPartitionsNode": "/brokers/topics/<topic>/partitions",
    "TopicsNode": "/brokers/topics",
    "ZkbrokerBrokersNode": "/zkbroker/brokers",
    "ZkbrokerNode": "/zkbroker",
}


def test_patterns() -> None:
    assert {node.__name__: node.PATTERN for node in ALL_NODE_CLASSES} == PATTERNS


# A value per field, for building concrete paths.
SAMPLE = {
    "topic": "t.1",
    "partition": 7,
    "id": 3,
    "group": "g",
    "consumer": "g_host-1-abcd",
    "type": "users",
    "name": "alice",
    "tokenId": "tok",
    "seq": 42,
}


def _args(node: type[ZNode[Any]]) -> tuple[Any, ...]:
    return tuple(SAMPLE[field] for field in node._FIELDS)


COMPOSED = [node for node in ALL_NODE_CLASSES if node.NAME]


@pytest.mark.parametrize("node", COMPOSED, ids=lambda c: c.__name__)
def test_a_path_is_its_parents_plus_one_segment(node: Any) -> None:
    parent = node.PARENT_NODE
    path = node.path(*_args(node))
    if parent is None:
        assert path == f"/{node.NAME}".replace("{seq:010d}", "0000000042").format(**SAMPLE)
        return
    assert parent in ALL_NODE_CLASSES
    assert node.PATTERN.startswith(f"{parent.PATTERN}/")
    assert node._FIELDS[: len(parent._FIELDS)] == parent._FIELDS
    assert path.startswith(f"{parent.path(*_args(parent))}/")
    assert "/" not in path[len(parent.path(*_args(parent))) + 1 :]


def test_concrete_paths() -> None:
    assert nodes.PartitionStateNode.path("t.1", 7) == "/brokers/topics/t.1/partitions/7/state"
    assert nodes.ConsumerOffsetNode.path("g", "t", 0) == "/consumers/g/offsets/t/0"
    assert nodes.BrokerOwnerNode.path(3) == "/zkbroker/brokers/3/owner"
    assert nodes.ConfigEntityNode.path("users", "a/clients/b") == "/config/users/a/clients/b"
    assert nodes.DelegationTokenInfoNode.path("x") == "/delegation_token/tokens/x"
    # A part is used as it is, braces included.
    assert nodes.TopicNode.path("a{0}b") == "/brokers/topics/a{0}b"
    assert nodes.ConfigChangeNotificationNode.path(-5) == "/config/changes/config_change_-000000005"


@pytest.mark.parametrize(
    "node", [c for c in ALL_NODE_CLASSES if issubclass(c, SequenceMixin)], ids=lambda c: c.__name__
)
def test_sequential_nodes_sit_below_their_parent(node: Any) -> None:
    assert node.KIND is NodeKind.PERSISTENT_SEQUENTIAL
    assert node.PARENT_NODE.path() == node.PARENT
    assert node.create_path() == f"{node.PARENT}/{node.PREFIX}"
    for sequence in (0, 42, -5, 2**31 - 1):
        assert node.path(sequence) == node.sequence_path(sequence)
        assert node.sequence_number(node.path(sequence)) == sequence


def test_path_takes_exactly_its_fields() -> None:
    with pytest.raises(TypeError, match=r"takes 2 positional argument\(s\) \(topic, partition\)"):
        nodes.PartitionStateNode.path("t")
    with pytest.raises(TypeError):
        nodes.TopicsNode.path("extra")
    with pytest.raises(TypeError):
        nodes.TopicNode.path(topic="t")


def test_badly_declared_classes_are_refused_and_not_registered() -> None:
    before = node_classes()
    with pytest.raises(TypeError, match="needs a name"):

        class NoPath(EmptyNode):
            pass

    with pytest.raises(TypeError, match="one non-empty path element"):

        class TwoSegments(EmptyNode, parent=nodes.TopicsNode, name="a/b"):
            pass

    with pytest.raises(TypeError, match="no composable path"):

        class BelowAcl(EmptyNode, parent=nodes.AclNode, name="x"):
            pass

    with pytest.raises(TypeError, match="parent is one fixed path"):

        class SequenceBelowAField(SequenceMixin, EmptyNode, parent=nodes.TopicNode):
            PREFIX = "x_"

    with pytest.raises(TypeError, match="no parent or name"):

        class AbstractWithPath(EmptyNode, abstract=True, name="x"):
            pass

    assert node_classes() == before
