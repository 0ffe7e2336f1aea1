"""The ACLs Kafka gives the znodes it creates (`ZkData.defaultAcls`, `ZkData.sensitivePath`,
Kafka 3.9), and who may write a znode under such ACLs (docs/kafka-behaviour.md §19).

With `zookeeper.set.acl=false` every znode is `world:anyone:cdrwa`; with `true`, the creating
session's identities get everything and the world may read, except on sensitive paths
(`/config/users`, `/config/brokers`, `/delegation_token/tokens`) and except `/consumers`
itself, which stays open. Paths are those inside the chroot; the chroot gets the ACLs of its
own path.

Not here: the session's identity (`ZkAuth.identity`, `zkbroker.zk_layout.store.auth`), sending
the ACLs (`zkbroker.zk_layout.store.client`), and Kafka's `zookeeper-security-migration` tool.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from kazoo.security import ACL, Id, Permissions, make_digest_acl_credential

from zkbroker.zk_layout.nodes.brokers import BrokersNode
from zkbroker.zk_layout.nodes.cluster import ConsumersNode
from zkbroker.zk_layout.nodes.config import ConfigEntityTypeNode, ConfigType
from zkbroker.zk_layout.nodes.delegation_token import DelegationTokensNode

#: ``ZkData.SensitiveRootPaths``: ConfigEntityTypeZNode(User), ConfigEntityTypeZNode(Broker),
#: DelegationTokensZNode.
SENSITIVE_ROOT_PATHS: Final = (
    ConfigEntityTypeNode.path(ConfigType.USERS),
    ConfigEntityTypeNode.path(ConfigType.BROKERS),
    DelegationTokensNode.path(),
)
#: ``ConsumerPathZNode``: kept open so that old consumers of any identity can register.
OLD_CONSUMERS_PATH: Final = ConsumersNode.path()
#: ``ZkData.SecureRootPaths`` that zkbroker creates at start: the one checked for a foreign
#: owner before anything is written (``writable_by``).
OWNERSHIP_PROBE_PATH: Final = BrokersNode.path()

_ANYONE: Final = Id("world", "anyone")
#: ZooDefs.Ids.OPEN_ACL_UNSAFE, CREATOR_ALL_ACL, READ_ACL_UNSAFE.
OPEN_ACL: Final = (ACL(Permissions.ALL, _ANYONE),)
CREATOR_ALL_ACL: Final = (ACL(Permissions.ALL, Id("auth", "")),)
READ_ACL: Final = (ACL(Permissions.READ, _ANYONE),)


def sensitive_path(path: str) -> bool:
    """``ZkData.sensitivePath``: a prefix test, as Kafka's ``startsWith``."""
    return any(path.startswith(root) for root in SENSITIVE_ROOT_PATHS)


def default_acls(secure: bool, path: str) -> list[ACL]:
    """``ZkData.defaultAcls(isSecure, path)``: the ACL list a znode at ``path`` is created with."""
    if not secure or path == OLD_CONSUMERS_PATH:
        return list(OPEN_ACL)
    if sensitive_path(path):
        return list(CREATOR_ALL_ACL)
    return [*CREATOR_ALL_ACL, *READ_ACL]


def digest_id(user: str, password: str) -> Id:
    """The identity ZooKeeper's digest provider gives a session that ran
    ``addauth digest user:password``: ``digest:user:base64(sha1(user:password))``."""
    return Id("digest", make_digest_acl_credential(user, password))


def writable_by(acls: Iterable[ACL], identities: Iterable[Id]) -> bool:
    """Whether a session holding ``identities`` (``world:anyone`` always included) may write
    a znode with ``acls`` (ZooKeeper's checkACL for WRITE)."""
    held = {(i.scheme, i.id) for i in identities} | {(_ANYONE.scheme, _ANYONE.id)}
    return any(acl.perms & Permissions.WRITE and (acl.id.scheme, acl.id.id) in held for acl in acls)
